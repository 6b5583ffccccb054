-- The views across accounts read the accounts at query time, one account's query at a time, instead of being one
-- UNION ALL over every schema rebuilt as accounts come and go (0001). Measured on 1,000 account schemas (a busy 2-core
-- machine), planning a query over the UNION ALL took 27-40 s (100 accounts: 0.1 s, 300: 0.9-2 s: it grows with the
-- square of the accounts), and each account added rebuilt four views in 5 s. Now each view is a set-returning function that runs, for every
-- account whose schema has the relation with every column it reads, that account's query, planned alone: linear in
-- the accounts. Nothing to rebuild, no trigger, and no dependency of the fleet on any account's objects (a migration of
-- an account's schema may drop or change a view these read). The functions run with the caller's privileges.
DROP TRIGGER accounts_refresh_fleet_views ON accounts;
--> statement-breakpoint
DROP FUNCTION accounts_refresh_fleet_views();
--> statement-breakpoint
DROP VIEW fleet_tickets, account_backlog, account_first_response, account_resolution;
--> statement-breakpoint
DROP FUNCTION refresh_fleet_views();
--> statement-breakpoint
CREATE FUNCTION fleet_queries(source text, columns jsonb) RETURNS TABLE(account text, query text)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
	SELECT a.name,
		format('SELECT %L::text, %s FROM %I.%I AS s', a.name,
			(SELECT string_agg(format('s.%I::%s', c.col->>0, c.col->>1), ', ' ORDER BY c.n)
				FROM jsonb_array_elements(columns) WITH ORDINALITY AS c(col, n)),
			a.schema_name, source)
	FROM accounts a
	CROSS JOIN LATERAL (SELECT to_regclass(format('%I.%I', a.schema_name, source)) AS rel) AS r
	WHERE r.rel IS NOT NULL
		AND NOT EXISTS (
			SELECT 1 FROM jsonb_array_elements(columns) AS c(col)
			WHERE NOT EXISTS (
				SELECT 1 FROM pg_attribute att
				WHERE att.attrelid = r.rel AND att.attname = c.col->>0 AND att.attnum > 0 AND NOT att.attisdropped
			)
		)
	ORDER BY a.name
$$;
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION fleet_queries(text, jsonb) FROM PUBLIC;
--> statement-breakpoint
CREATE FUNCTION fleet_tickets_rows() RETURNS TABLE(account text, id text, name text, email text, status text, priority text, has_unread_messages boolean, replied_to_customer boolean, closed_at timestamp(6) with time zone, last_contact_at timestamp(6) with time zone, created_at timestamp(6) with time zone, updated_at timestamp(6) with time zone, assigned_to jsonb, widget_id text, widget_name text, ai_summary text, in_open boolean, in_self boolean, in_unassigned boolean, in_resolved boolean, first_seen_at timestamp(6) with time zone, last_seen_at timestamp(6) with time zone, detail_synced_at timestamp(6) with time zone, missing_since timestamp(6) with time zone, deleted_at timestamp(6) with time zone, raw jsonb)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
	q record;
BEGIN
	FOR q IN SELECT * FROM fleet_queries('tickets', '[["id", "text"], ["name", "text"], ["email", "text"], ["status", "text"], ["priority", "text"], ["has_unread_messages", "boolean"], ["replied_to_customer", "boolean"], ["closed_at", "timestamp(6) with time zone"], ["last_contact_at", "timestamp(6) with time zone"], ["created_at", "timestamp(6) with time zone"], ["updated_at", "timestamp(6) with time zone"], ["assigned_to", "jsonb"], ["widget_id", "text"], ["widget_name", "text"], ["ai_summary", "text"], ["in_open", "boolean"], ["in_self", "boolean"], ["in_unassigned", "boolean"], ["in_resolved", "boolean"], ["first_seen_at", "timestamp(6) with time zone"], ["last_seen_at", "timestamp(6) with time zone"], ["detail_synced_at", "timestamp(6) with time zone"], ["missing_since", "timestamp(6) with time zone"], ["deleted_at", "timestamp(6) with time zone"], ["raw", "jsonb"]]') LOOP
		RETURN QUERY EXECUTE q.query;
	END LOOP;
END
$$;
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION fleet_tickets_rows() FROM PUBLIC;
--> statement-breakpoint
CREATE VIEW fleet_tickets AS SELECT * FROM fleet_tickets_rows();
--> statement-breakpoint
CREATE FUNCTION account_backlog_rows() RETURNS TABLE(account text, day date, as_of timestamp with time zone, open_tickets bigint)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
	q record;
BEGIN
	FOR q IN SELECT * FROM fleet_queries('open_backlog_daily', '[["day", "date"], ["as_of", "timestamp with time zone"], ["open_tickets", "bigint"]]') LOOP
		RETURN QUERY EXECUTE q.query;
	END LOOP;
END
$$;
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION account_backlog_rows() FROM PUBLIC;
--> statement-breakpoint
CREATE VIEW account_backlog AS SELECT * FROM account_backlog_rows();
--> statement-breakpoint
CREATE FUNCTION account_first_response_rows() RETURNS TABLE(account text, ticket_id text, created_at timestamp(6) with time zone, first_response_at timestamp with time zone, first_response_seconds double precision, first_response_business_seconds double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
	q record;
BEGIN
	FOR q IN SELECT * FROM fleet_queries('ticket_first_response', '[["ticket_id", "text"], ["created_at", "timestamp(6) with time zone"], ["first_response_at", "timestamp with time zone"], ["first_response_seconds", "double precision"], ["first_response_business_seconds", "double precision"]]') LOOP
		RETURN QUERY EXECUTE q.query;
	END LOOP;
END
$$;
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION account_first_response_rows() FROM PUBLIC;
--> statement-breakpoint
CREATE VIEW account_first_response AS SELECT * FROM account_first_response_rows();
--> statement-breakpoint
CREATE FUNCTION account_resolution_rows() RETURNS TABLE(account text, ticket_id text, created_at timestamp(6) with time zone, closed_at timestamp(6) with time zone, resolution_seconds double precision, resolution_business_seconds double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
	q record;
BEGIN
	FOR q IN SELECT * FROM fleet_queries('ticket_resolution', '[["ticket_id", "text"], ["created_at", "timestamp(6) with time zone"], ["closed_at", "timestamp(6) with time zone"], ["resolution_seconds", "double precision"], ["resolution_business_seconds", "double precision"]]') LOOP
		RETURN QUERY EXECUTE q.query;
	END LOOP;
END
$$;
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION account_resolution_rows() FROM PUBLIC;
--> statement-breakpoint
CREATE VIEW account_resolution AS SELECT * FROM account_resolution_rows();
