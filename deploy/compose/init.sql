-- Runs once, as the postgres superuser, when the compose Postgres volume is
-- first created (/docker-entrypoint-initdb.d). The passwords are for local
-- development only: change them (and deploy/compose.yaml's URLs) anywhere
-- else, or create the roles with `\password`.
--
-- slaproof_service: the NOLOGIN group role whose privileges the migrations
-- grant. The first migration creates it when missing, which needs
-- CREATEROLE; creating it here lets the owner do without CREATEROLE.
CREATE ROLE slaproof_service NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;

-- The owner: runs `slaproof migrate`, owns every table and the SECURITY
-- DEFINER functions.
CREATE ROLE slaproof_owner LOGIN PASSWORD 'owner-dev-CHANGE-ME'
    NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;

-- The service login every `slaproof serve` connects as: a member of
-- slaproof_service, owning nothing, no SUPERUSER, no BYPASSRLS (slaproof
-- refuses to start otherwise: row-level security must bind it).
CREATE ROLE slaproof_app LOGIN PASSWORD 'app-dev-CHANGE-ME'
    NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE IN ROLE slaproof_service;

-- The database, owned by the owner (so is its public schema on Postgres 15+,
-- where the migrations create tables).
CREATE DATABASE slaproof OWNER slaproof_owner;
\connect slaproof
ALTER SCHEMA public OWNER TO slaproof_owner;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
