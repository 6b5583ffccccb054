-- The operator's views across the fleet: each a UNION ALL of one relation of every account's schema, with the account's
-- name in front. Rebuilt by refresh_fleet_views() whenever an account is added or removed (the trigger below, so SQL
-- inserts and deletes too) and when a worker first migrates an account's schema (db/repos/accounts.ts,
-- refreshFleetViews). An account whose schema does not exist yet, or lacks a column a view reads, is left out.
-- The column lists are fixed here, so CREATE OR REPLACE always fits; a new column is a new migration of this set.
-- The comments of the table, the views and their columns come from src/db/fleetComments.ts, applied after migrating.
CREATE FUNCTION refresh_fleet_views() RETURNS integer
LANGUAGE plpgsql
-- Runs as its owner (the migrating role), in the fleet schema whoever calls it: an automation role that may insert
-- into accounts need not own the views, and no caller's search_path can redirect a name.
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
	specs constant jsonb := '[
		{"view": "fleet_tickets", "source": "tickets", "columns": [
			["id", "text"], ["name", "text"], ["email", "text"], ["status", "text"], ["priority", "text"],
			["has_unread_messages", "boolean"], ["replied_to_customer", "boolean"],
			["closed_at", "timestamp(6) with time zone"], ["last_contact_at", "timestamp(6) with time zone"],
			["created_at", "timestamp(6) with time zone"], ["updated_at", "timestamp(6) with time zone"],
			["assigned_to", "jsonb"], ["widget_id", "text"], ["widget_name", "text"], ["ai_summary", "text"],
			["in_open", "boolean"], ["in_self", "boolean"], ["in_unassigned", "boolean"], ["in_resolved", "boolean"],
			["first_seen_at", "timestamp(6) with time zone"], ["last_seen_at", "timestamp(6) with time zone"],
			["detail_synced_at", "timestamp(6) with time zone"], ["missing_since", "timestamp(6) with time zone"],
			["deleted_at", "timestamp(6) with time zone"], ["raw", "jsonb"]]},
		{"view": "account_backlog", "source": "open_backlog_daily", "columns": [
			["day", "date"], ["as_of", "timestamp with time zone"], ["open_tickets", "bigint"]]},
		{"view": "account_first_response", "source": "ticket_first_response", "columns": [
			["ticket_id", "text"], ["created_at", "timestamp(6) with time zone"], ["first_response_at", "timestamp with time zone"],
			["first_response_seconds", "double precision"], ["first_response_business_seconds", "double precision"]]},
		{"view": "account_resolution", "source": "ticket_resolution", "columns": [
			["ticket_id", "text"], ["created_at", "timestamp(6) with time zone"], ["closed_at", "timestamp(6) with time zone"],
			["resolution_seconds", "double precision"], ["resolution_business_seconds", "double precision"]]}
	]';
	spec jsonb;
	account record;
	source regclass;
	branches text[];
	body text;
	included integer := 0;
BEGIN
	-- Two transactions adding accounts at once would otherwise race on the same views ("tuple concurrently updated");
	-- the second waits for the first to commit and then sees its row.
	PERFORM pg_advisory_xact_lock(hashtext('ticket-mirror:fleet-views:' || current_schema()));
	FOR spec IN SELECT value FROM jsonb_array_elements(specs) LOOP
		branches := '{}';
		FOR account IN SELECT a.name, a.schema_name FROM accounts a ORDER BY a.name LOOP
			source := to_regclass(format('%I.%I', account.schema_name, spec->>'source'));
			CONTINUE WHEN source IS NULL;
			CONTINUE WHEN EXISTS (
				SELECT 1 FROM jsonb_array_elements(spec->'columns') AS c(col)
				WHERE NOT EXISTS (
					SELECT 1 FROM pg_attribute a
					WHERE a.attrelid = source AND a.attname = c.col->>0 AND a.attnum > 0 AND NOT a.attisdropped
				)
			);
			SELECT format('SELECT %L::text AS account, %s FROM %I.%I AS s', account.name,
					string_agg(format('s.%I::%s AS %I', c.col->>0, c.col->>1, c.col->>0), ', ' ORDER BY c.n),
					account.schema_name, spec->>'source')
				INTO body
				FROM jsonb_array_elements(spec->'columns') WITH ORDINALITY AS c(col, n);
			branches := branches || body;
			IF spec->>'view' = 'fleet_tickets' THEN included := included + 1; END IF;
		END LOOP;
		IF cardinality(branches) = 0 THEN
			-- No account has the relation yet: the view exists all the same, empty, with its columns and types.
			SELECT 'SELECT NULL::text AS account, ' || string_agg(format('NULL::%s AS %I', c.col->>1, c.col->>0), ', ' ORDER BY c.n) || ' WHERE false'
				INTO body
				FROM jsonb_array_elements(spec->'columns') WITH ORDINALITY AS c(col, n);
			branches := ARRAY[body];
		END IF;
		EXECUTE format('CREATE OR REPLACE VIEW %I AS %s', spec->>'view', array_to_string(branches, E'\nUNION ALL\n'));
	END LOOP;
	RETURN included;
END
$$;
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION refresh_fleet_views() FROM PUBLIC;
--> statement-breakpoint
CREATE FUNCTION accounts_refresh_fleet_views() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
	PERFORM refresh_fleet_views();
	RETURN NULL;
END
$$;
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION accounts_refresh_fleet_views() FROM PUBLIC;
--> statement-breakpoint
CREATE TRIGGER accounts_refresh_fleet_views
AFTER INSERT OR DELETE OR UPDATE OF schema_name ON accounts
FOR EACH STATEMENT EXECUTE FUNCTION accounts_refresh_fleet_views();
--> statement-breakpoint
SELECT refresh_fleet_views();
