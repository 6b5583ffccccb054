-- report_time_zone() and business_seconds(from_at, to_at) read report_settings by a name the CALLER's search_path
-- resolved, so a BI view of a schema other than the session's (DB_SCHEMA=x read from psql's default search_path, or the
-- fleet's views across account schemas) failed with 'relation "report_settings" does not exist' or read another schema's
-- settings. Their bodies now name this schema's table. Written with format() so that no schema name is in this file: it
-- is the schema being migrated. report_time_zone() stays a plain SQL function without SET options, so it is still
-- inlined into the views that call it.
DO $migration$
BEGIN
	EXECUTE format($f$
		CREATE OR REPLACE FUNCTION report_time_zone() RETURNS text
		LANGUAGE sql STABLE PARALLEL SAFE
		AS $body$ SELECT coalesce((SELECT time_zone FROM %I.report_settings), 'UTC') $body$
	$f$, current_schema());
	EXECUTE format($f$
		CREATE OR REPLACE FUNCTION business_seconds(from_at timestamptz, to_at timestamptz) RETURNS double precision
		LANGUAGE plpgsql STABLE PARALLEL SAFE
		AS $body$
		DECLARE
			zone text;
			windows jsonb;
		BEGIN
			SELECT s.time_zone, s.business_windows INTO zone, windows FROM %I.report_settings s;
			RETURN %I.business_seconds(from_at, to_at, zone, windows);
		END
		$body$
	$f$, current_schema(), current_schema());
END
$migration$;
