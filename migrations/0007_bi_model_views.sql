-- Reporting in the team's time zone, business hours and SLAs, and the BI model's agents and current tickets.
-- report_settings is written by every migrate from REPORT_TIMEZONE, REPORT_BUSINESS_HOURS and REPORT_SLA_* (see
-- src/db/repos/reportSettings.ts); the views read it, so a day, a week or an hour is the team's. The comments of every
-- table, column, view and function come from src/db/comments.ts and are applied after the migrations by migrate.
INSERT INTO report_settings (id) VALUES (true) ON CONFLICT (id) DO NOTHING;
--> statement-breakpoint
UPDATE messages m SET synced_at = t.detail_synced_at FROM tickets t WHERE t.id = m.ticket_id AND m.removed_at IS NULL;
--> statement-breakpoint
UPDATE attachments a SET synced_at = t.detail_synced_at FROM tickets t WHERE t.id = a.ticket_id AND a.removed_at IS NULL;
--> statement-breakpoint
CREATE FUNCTION report_time_zone() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT coalesce((SELECT time_zone FROM report_settings), 'UTC') $$;
--> statement-breakpoint
CREATE FUNCTION business_seconds(from_at timestamptz, to_at timestamptz, time_zone text, windows jsonb) RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
	SELECT CASE
		WHEN from_at IS NULL OR to_at IS NULL OR windows IS NULL OR jsonb_typeof(windows) <> 'array' THEN NULL
		WHEN to_at <= from_at THEN 0::double precision
		ELSE (
			SELECT coalesce(sum(extract(epoch FROM least(to_at, o.closes_at) - greatest(from_at, o.opens_at))), 0)::double precision
			FROM jsonb_to_recordset(windows) AS w(isodow int, opens text, closes text)
			JOIN generate_series((from_at AT TIME ZONE time_zone)::date::timestamp, (to_at AT TIME ZONE time_zone)::date::timestamp, interval '1 day') AS d(day)
				ON extract(isodow FROM d.day) = w.isodow
			CROSS JOIN LATERAL (
				SELECT (d.day + w.opens::interval) AT TIME ZONE time_zone AS opens_at,
					(d.day + w.closes::interval) AT TIME ZONE time_zone AS closes_at
			) AS o
			WHERE o.closes_at > from_at AND o.opens_at < to_at
		)
	END
$$;
--> statement-breakpoint
CREATE FUNCTION business_seconds(from_at timestamptz, to_at timestamptz) RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT business_seconds(from_at, to_at, s.time_zone, s.business_windows) FROM report_settings s $$;
--> statement-breakpoint
CREATE OR REPLACE VIEW open_backlog_daily AS
WITH settings AS (SELECT report_time_zone() AS tz),
open_spans AS (
	-- least() ignores nulls: a span ends at valid_to, or at the ticket's deletion if earlier, or is still running.
	SELECT h.ticket_id, h.valid_from, least(h.valid_to, t.deleted_at) AS valid_to
	FROM ticket_history h
	JOIN tickets t ON t.id = h.ticket_id
	WHERE h.in_open
),
days AS (
	SELECT d::date AS day
	FROM settings, generate_series(
		(SELECT (min(valid_from) AT TIME ZONE settings.tz)::date FROM ticket_history)::timestamp,
		(now() AT TIME ZONE settings.tz)::date::timestamp,
		interval '1 day'
	) AS d
)
SELECT days.day, b.as_of, count(DISTINCT s.ticket_id) AS open_tickets
FROM days
CROSS JOIN settings
CROSS JOIN LATERAL (SELECT least((days.day + 1)::timestamp AT TIME ZONE settings.tz, now()) AS as_of) AS b
LEFT JOIN open_spans s ON s.valid_from <= b.as_of AND (s.valid_to IS NULL OR s.valid_to > b.as_of)
GROUP BY days.day, b.as_of;
--> statement-breakpoint
CREATE OR REPLACE VIEW reply_delivery AS
SELECT (m.created_at AT TIME ZONE report_time_zone())::date AS day,
	count(*) AS outbound_messages,
	count(*) FILTER (WHERE m.outbound_sent) AS sent,
	count(*) FILTER (WHERE m.outbound_delivered_at IS NOT NULL) AS delivered,
	count(*) FILTER (WHERE m.outbound_bounced) AS bounced,
	count(*) FILTER (WHERE m.outbound_spam_complaint) AS spam_complaints,
	count(*) FILTER (WHERE m.outbound_error IS NOT NULL) AS errors
FROM messages m
JOIN tickets t ON t.id = m.ticket_id
WHERE m.message_type = 'outbound' AND m.removed_at IS NULL AND t.deleted_at IS NULL
GROUP BY 1;
--> statement-breakpoint
CREATE OR REPLACE VIEW ticket_first_response AS
SELECT t.id AS ticket_id, t.created_at, fr.first_response_at,
	extract(epoch FROM fr.first_response_at - t.created_at)::double precision AS first_response_seconds,
	business_seconds(t.created_at, fr.first_response_at) AS first_response_business_seconds
FROM tickets t
LEFT JOIN LATERAL (
	SELECT min(m.created_at) AS first_response_at
	FROM messages m
	WHERE m.ticket_id = t.id AND m.message_type = 'outbound' AND m.removed_at IS NULL AND m.created_at > t.created_at
) AS fr ON true
WHERE t.deleted_at IS NULL;
--> statement-breakpoint
CREATE OR REPLACE VIEW ticket_resolution AS
SELECT id AS ticket_id, created_at, closed_at,
	extract(epoch FROM closed_at - created_at)::double precision AS resolution_seconds,
	business_seconds(created_at, closed_at) AS resolution_business_seconds
FROM tickets
WHERE closed_at IS NOT NULL AND deleted_at IS NULL;
--> statement-breakpoint
CREATE VIEW ticket_load_hourly AS
WITH events AS (
	SELECT t.created_at AS at, 1 AS created, 0 AS inbound, 0 AS outbound
	FROM tickets t WHERE t.deleted_at IS NULL AND t.created_at IS NOT NULL
	UNION ALL
	SELECT m.created_at, 0, (m.message_type = 'inbound')::int, (m.message_type = 'outbound')::int
	FROM messages m JOIN tickets t ON t.id = m.ticket_id
	WHERE m.removed_at IS NULL AND t.deleted_at IS NULL AND m.message_type IN ('inbound', 'outbound') AND m.created_at IS NOT NULL
)
SELECT date_trunc('hour', e.at, s.tz) AS hour,
	(date_trunc('hour', e.at, s.tz) AT TIME ZONE s.tz)::date AS day,
	extract(isodow FROM date_trunc('hour', e.at, s.tz) AT TIME ZONE s.tz)::int AS isodow,
	extract(hour FROM date_trunc('hour', e.at, s.tz) AT TIME ZONE s.tz)::int AS hour_of_day,
	sum(e.created) AS tickets_created,
	sum(e.inbound) AS inbound_messages,
	sum(e.outbound) AS outbound_messages
FROM events e
CROSS JOIN (SELECT report_time_zone() AS tz) AS s
GROUP BY date_trunc('hour', e.at, s.tz), s.tz;
--> statement-breakpoint
CREATE VIEW response_times_weekly AS
WITH settings AS (SELECT report_time_zone() AS tz),
created AS (
	SELECT date_trunc('week', f.created_at AT TIME ZONE s.tz)::date AS week,
		count(*) AS tickets_created,
		count(f.first_response_at) AS tickets_answered,
		percentile_cont(0.5) WITHIN GROUP (ORDER BY f.first_response_seconds) AS first_response_p50_seconds,
		percentile_cont(0.9) WITHIN GROUP (ORDER BY f.first_response_seconds) AS first_response_p90_seconds,
		percentile_cont(0.5) WITHIN GROUP (ORDER BY f.first_response_business_seconds) AS first_response_business_p50_seconds,
		percentile_cont(0.9) WITHIN GROUP (ORDER BY f.first_response_business_seconds) AS first_response_business_p90_seconds
	FROM ticket_first_response f CROSS JOIN settings s
	WHERE f.created_at IS NOT NULL
	GROUP BY 1
),
resolved AS (
	SELECT date_trunc('week', r.closed_at AT TIME ZONE s.tz)::date AS week,
		count(*) AS tickets_resolved,
		percentile_cont(0.5) WITHIN GROUP (ORDER BY r.resolution_seconds) AS resolution_p50_seconds,
		percentile_cont(0.9) WITHIN GROUP (ORDER BY r.resolution_seconds) AS resolution_p90_seconds,
		percentile_cont(0.5) WITHIN GROUP (ORDER BY r.resolution_business_seconds) AS resolution_business_p50_seconds,
		percentile_cont(0.9) WITHIN GROUP (ORDER BY r.resolution_business_seconds) AS resolution_business_p90_seconds
	FROM ticket_resolution r CROSS JOIN settings s
	GROUP BY 1
)
SELECT w.week, w.week::timestamp AT TIME ZONE s.tz AS week_start,
	coalesce(c.tickets_created, 0) AS tickets_created, coalesce(c.tickets_answered, 0) AS tickets_answered,
	c.first_response_p50_seconds, c.first_response_p90_seconds,
	c.first_response_business_p50_seconds, c.first_response_business_p90_seconds,
	coalesce(r.tickets_resolved, 0) AS tickets_resolved,
	r.resolution_p50_seconds, r.resolution_p90_seconds,
	r.resolution_business_p50_seconds, r.resolution_business_p90_seconds
FROM (SELECT week FROM created UNION SELECT week FROM resolved) AS w
CROSS JOIN settings s
LEFT JOIN created c ON c.week = w.week
LEFT JOIN resolved r ON r.week = w.week;
--> statement-breakpoint
CREATE VIEW tickets_current AS
SELECT t.id, t.name, t.email, t.status, t.priority, t.has_unread_messages, t.replied_to_customer,
	t.created_at, t.updated_at, t.last_contact_at, t.closed_at,
	t.assigned_to_id,
	CASE WHEN t.assigned_to_id IS NOT NULL THEN t.assigned_to ->> 'name' END AS assigned_to_name,
	CASE WHEN t.assigned_to_id IS NOT NULL THEN t.assigned_to ->> 'email' END AS assigned_to_email,
	t.widget_id, t.widget_name, t.ai_summary,
	t.in_open, t.in_self, t.in_unassigned, t.in_resolved,
	t.missing_since, t.last_seen_at, t.detail_synced_at AS synced_at
FROM tickets t
WHERE t.deleted_at IS NULL;
--> statement-breakpoint
CREATE VIEW agents AS
WITH sightings AS (
	-- A message the agent wrote.
	SELECT m.author_id AS id, m.author ->> 'name' AS name, m.author ->> 'email' AS email,
		m.created_at AS first_at, m.created_at AS last_at
	FROM messages m
	WHERE m.author_id IS NOT NULL AND m.created_at IS NOT NULL
	UNION ALL
	-- An assignment, from when it was first seen to the last observation that still showed it.
	SELECT h.assigned_to_id, h.assigned_to ->> 'name', h.assigned_to ->> 'email', h.valid_from,
		CASE WHEN h.valid_to IS NULL THEN greatest(h.valid_from, t.state_seen_at) ELSE coalesce(nx.changed_after, h.valid_from) END
	FROM ticket_history h
	JOIN tickets t ON t.id = h.ticket_id
	LEFT JOIN LATERAL (
		SELECT n.changed_after FROM ticket_history n
		WHERE n.ticket_id = h.ticket_id AND n.valid_from = h.valid_to
		ORDER BY n.id LIMIT 1
	) AS nx ON h.valid_to IS NOT NULL
	WHERE h.assigned_to_id IS NOT NULL
	UNION ALL
	-- The current assignment as the ticket row has it.
	SELECT t.assigned_to_id, t.assigned_to ->> 'name', t.assigned_to ->> 'email',
		coalesce(t.state_seen_at, t.detail_synced_at, t.last_seen_at), coalesce(t.state_seen_at, t.detail_synced_at, t.last_seen_at)
	FROM tickets t
	WHERE t.assigned_to_id IS NOT NULL
),
latest AS (
	SELECT DISTINCT ON (id) id, name, email FROM sightings ORDER BY id, last_at DESC, name, email
),
spans AS (
	SELECT id, min(first_at) AS first_seen_at, max(last_at) AS last_seen_at FROM sightings GROUP BY id
)
SELECT sp.id, l.name, l.email, sp.first_seen_at, sp.last_seen_at,
	coalesce(mc.n, 0) AS messages,
	coalesce(tc.n, 0) AS assigned_tickets,
	coalesce(tc.open_n, 0) AS open_tickets
FROM spans sp
JOIN latest l ON l.id = sp.id
LEFT JOIN (
	SELECT m.author_id AS id, count(*) AS n FROM messages m JOIN tickets t ON t.id = m.ticket_id
	WHERE m.removed_at IS NULL AND t.deleted_at IS NULL AND m.author_id IS NOT NULL GROUP BY 1
) AS mc ON mc.id = sp.id
LEFT JOIN (
	SELECT assigned_to_id AS id, count(*) AS n, count(*) FILTER (WHERE in_open) AS open_n FROM tickets
	WHERE deleted_at IS NULL AND assigned_to_id IS NOT NULL GROUP BY 1
) AS tc ON tc.id = sp.id;
--> statement-breakpoint
CREATE VIEW ticket_sla AS
WITH settings AS (
	SELECT (SELECT business_windows IS NOT NULL FROM report_settings) AS business,
		(SELECT sla_first_response_seconds FROM report_settings) AS first_response_target,
		(SELECT sla_resolution_seconds FROM report_settings) AS resolution_target
),
measured AS (
	SELECT t.id, t.created_at, t.status, t.priority, t.assigned_to_id, t.widget_name, t.closed_at,
		f.first_response_at, f.first_response_seconds, f.first_response_business_seconds,
		s.business, s.first_response_target, s.resolution_target,
		CASE WHEN s.business THEN business_seconds(t.created_at, coalesce(f.first_response_at, now()))
			ELSE extract(epoch FROM coalesce(f.first_response_at, now()) - t.created_at)::double precision END AS first_response_elapsed,
		CASE WHEN s.business THEN business_seconds(t.created_at, coalesce(t.closed_at, now()))
			ELSE extract(epoch FROM coalesce(t.closed_at, now()) - t.created_at)::double precision END AS resolution_elapsed
	FROM tickets t
	CROSS JOIN settings s
	JOIN ticket_first_response f ON f.ticket_id = t.id
	WHERE t.deleted_at IS NULL AND t.created_at IS NOT NULL
)
SELECT id AS ticket_id, created_at, status, priority, assigned_to_id, widget_name,
	CASE WHEN business THEN 'business_hours' ELSE 'calendar' END AS sla_clock,
	first_response_at, first_response_target AS first_response_target_seconds,
	first_response_elapsed AS first_response_elapsed_seconds,
	first_response_elapsed > first_response_target AS first_response_breached,
	closed_at, resolution_target AS resolution_target_seconds,
	resolution_elapsed AS resolution_elapsed_seconds,
	resolution_elapsed > resolution_target AS resolution_breached
FROM measured;
--> statement-breakpoint
CREATE VIEW sla_breaches AS
SELECT * FROM ticket_sla WHERE first_response_breached OR resolution_breached;
