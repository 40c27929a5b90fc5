-- A bulk check's report is kept for its caller to read again, not forever:
-- the newest reports of each customer (and of the provider) stay, older
-- ones are deleted as a new one is recorded, so that checks repeated at
-- the limit of 10,000 requests cannot grow the table without bound.
GRANT DELETE ON transparency_checks TO slaproof_service;
