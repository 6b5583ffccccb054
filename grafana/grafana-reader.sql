-- The role Grafana's PostgreSQL data source logs in as: SELECT on the mirror's tables and views, nothing else (Grafana
-- does not check the queries its users write). Run by the compose service grafana-reader as the mirror's owner, after
-- the daemon has migrated; safe to run again (it then sets the password and the grants anew).
--
--   GRAFANA_DB_PASSWORD=... psql -v reader=grafana_reader -v schema=public -f grafana/grafana-reader.sql
--
-- reader defaults to grafana_reader, schema (DB_SCHEMA) to public; the password is read from the environment, so that
-- it is on no command line.
\set ON_ERROR_STOP on
\if :{?reader}
\else
  \set reader grafana_reader
\endif
\if :{?schema}
\else
  \set schema public
\endif
\set password ''
\getenv password GRAFANA_DB_PASSWORD
SELECT length(:'password') < 12 AS weak \gset
\if :weak
  DO $$ BEGIN RAISE EXCEPTION 'GRAFANA_DB_PASSWORD must be set, to at least 12 characters (in .env for docker compose)'; END $$;
\endif
SELECT format('CREATE ROLE %I LOGIN', :'reader') WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'reader') \gexec
SELECT format('ALTER ROLE %I LOGIN PASSWORD %L', :'reader', :'password') \gexec
-- Unqualified names in the dashboards' queries find the mirror's tables and views.
SELECT format('ALTER ROLE %I SET search_path = %I', :'reader', :'schema') \gexec
SELECT format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), :'reader') \gexec
SELECT format('GRANT USAGE ON SCHEMA %I TO %I', :'schema', :'reader') \gexec
SELECT format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I', :'schema', :'reader') \gexec
-- Tables and views that later migrations create (as this same owner) are readable too.
SELECT format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO %I', :'schema', :'reader') \gexec
