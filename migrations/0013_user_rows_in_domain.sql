-- Values the daemon never writes, refused from now on (src/db/schema.ts): negative counts in list_polls and
-- tickets.detail_failures, jsonb nested deeper than any answer of the API, business windows of another shape than
-- REPORT_BUSINESS_HOURS gives. Each stopped every pass, or the report, when written by hand. Rows written so before
-- this migration are brought into the domain first: a negative count to 0, a too-deep value to null, a malformed
-- business_windows to none (the next migrate with REPORT_BUSINESS_HOURS set writes it again).
UPDATE "list_polls" SET "items" = greatest("items", 0), "changes" = greatest("changes", 0), "withheld" = greatest("withheld", 0) WHERE "items" < 0 OR "changes" < 0 OR "withheld" < 0;
--> statement-breakpoint
UPDATE "tickets" SET "detail_failures" = 0 WHERE "detail_failures" < 0;
--> statement-breakpoint
UPDATE "tickets" SET "assigned_to" = NULL WHERE pg_column_size("assigned_to") >= 512 AND jsonb_path_exists("assigned_to", '$.**{101}');
--> statement-breakpoint
UPDATE "ticket_history" SET "assigned_to" = NULL WHERE pg_column_size("assigned_to") >= 512 AND jsonb_path_exists("assigned_to", '$.**{101}');
--> statement-breakpoint
UPDATE "messages" SET "author" = NULL WHERE pg_column_size("author") >= 512 AND jsonb_path_exists("author", '$.**{101}');
--> statement-breakpoint
UPDATE "report_settings" SET "business_windows" = NULL, "business_hours" = NULL WHERE NOT ("report_settings"."business_windows" is null or (jsonb_typeof("report_settings"."business_windows") = 'array'
        and not jsonb_path_exists("report_settings"."business_windows", 'strict $[*] ? (@.type() != "object")')
        and jsonb_path_query_array("report_settings"."business_windows", '$[*].isodow')::text ~ '^\[([1-7](, [1-7])*)?\]$'
        and not jsonb_path_exists("report_settings"."business_windows", '$[*] ? (!(@.isodow.type() == "number" && @.opens.type() == "string" && @.opens like_regex "^([01][0-9]|2[0-3]):[0-5][0-9]$" && @.closes.type() == "string" && @.closes like_regex "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$" && @.opens < @.closes))')));
--> statement-breakpoint
ALTER TABLE "list_polls" ADD CONSTRAINT "list_polls_counts_check" CHECK ("list_polls"."items" >= 0 and "list_polls"."changes" >= 0 and "list_polls"."withheld" >= 0);--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_author_check" CHECK (case when pg_column_size("messages"."author") < 512 then true else not jsonb_path_exists("messages"."author", '$.**{101}') end);--> statement-breakpoint
ALTER TABLE "report_settings" ADD CONSTRAINT "report_settings_business_windows_check" CHECK ("report_settings"."business_windows" is null or (jsonb_typeof("report_settings"."business_windows") = 'array'
        and not jsonb_path_exists("report_settings"."business_windows", 'strict $[*] ? (@.type() != "object")')
        and jsonb_path_query_array("report_settings"."business_windows", '$[*].isodow')::text ~ '^\[([1-7](, [1-7])*)?\]$'
        and not jsonb_path_exists("report_settings"."business_windows", '$[*] ? (!(@.isodow.type() == "number" && @.opens.type() == "string" && @.opens like_regex "^([01][0-9]|2[0-3]):[0-5][0-9]$" && @.closes.type() == "string" && @.closes like_regex "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$" && @.opens < @.closes))')));--> statement-breakpoint
ALTER TABLE "ticket_history" ADD CONSTRAINT "ticket_history_assigned_to_check" CHECK (case when pg_column_size("ticket_history"."assigned_to") < 512 then true else not jsonb_path_exists("ticket_history"."assigned_to", '$.**{101}') end);--> statement-breakpoint
ALTER TABLE "tickets" ADD CONSTRAINT "tickets_detail_failures_check" CHECK ("tickets"."detail_failures" >= 0);--> statement-breakpoint
ALTER TABLE "tickets" ADD CONSTRAINT "tickets_assigned_to_check" CHECK (case when pg_column_size("tickets"."assigned_to") < 512 then true else not jsonb_path_exists("tickets"."assigned_to", '$.**{101}') end);