-- Alert states name the SLA version whose evaluation set them (issue #31,
-- item 3). They were kept per SLA and objective only, so after an SLA moved
-- to another customer, the alerts the first customer's traffic set off were
-- shown to the second. A customer's user now reads only the states set
-- under its own customer's versions (the one rule of the application
-- layer, `readable_versions`). Rows from before name no version: shown to
-- the provider only, until the next round writes them again.
ALTER TABLE alert_states ADD COLUMN version integer;
COMMENT ON COLUMN alert_states.version IS
    'The SLA version whose evaluation last wrote this state; NULL on rows written before versions were kept (shown to the provider only).';
