-- Views for BI tools (Metabase, Grafana, psql): the usual support questions, one view each.
-- Names are unqualified: they land in the schema of the migration's search_path (DB_SCHEMA), like the tables.
-- Every instant stays timestamptz; every duration is in seconds (double precision, microseconds kept); days are UTC.
-- Tickets the API answered 404 for (deleted_at is not null) and messages no longer in their ticket's detail
-- (removed_at is not null) are left out, except in open_backlog_daily, which counts a deleted ticket up to its deletion.
CREATE VIEW open_backlog_daily AS
WITH open_spans AS (
	-- least() ignores nulls: a span ends at valid_to, or at the ticket's deletion if earlier, or is still running.
	SELECT h.ticket_id, h.valid_from, least(h.valid_to, t.deleted_at) AS valid_to
	FROM ticket_history h
	JOIN tickets t ON t.id = h.ticket_id
	WHERE h.in_open
),
days AS (
	SELECT d::date AS day
	FROM generate_series(
		(SELECT (min(valid_from) AT TIME ZONE 'UTC')::date FROM ticket_history)::timestamp,
		(now() AT TIME ZONE 'UTC')::date::timestamp,
		interval '1 day'
	) AS d
)
SELECT days.day, b.as_of, count(DISTINCT s.ticket_id) AS open_tickets
FROM days
CROSS JOIN LATERAL (SELECT least((days.day + 1)::timestamp AT TIME ZONE 'UTC', now()) AS as_of) AS b
LEFT JOIN open_spans s ON s.valid_from <= b.as_of AND (s.valid_to IS NULL OR s.valid_to > b.as_of)
GROUP BY days.day, b.as_of;
--> statement-breakpoint
COMMENT ON VIEW open_backlog_daily IS 'How many tickets were open at the end of each day? One row per UTC day from the day of the first ticket_history row to today. day: the UTC date. as_of: the instant counted, the end of the day (midnight UTC after it), or now() for today. open_tickets: tickets whose ticket_history row in effect at as_of has in_open (valid_from <= as_of < valid_to). A deleted ticket counts only until its deleted_at.';
--> statement-breakpoint
COMMENT ON COLUMN open_backlog_daily.day IS 'UTC date';
--> statement-breakpoint
COMMENT ON COLUMN open_backlog_daily.as_of IS 'the instant counted: midnight UTC ending the day, or now() for today';
--> statement-breakpoint
COMMENT ON COLUMN open_backlog_daily.open_tickets IS 'tickets in the open list at as_of, per ticket_history';
--> statement-breakpoint
CREATE VIEW ticket_first_response AS
SELECT t.id AS ticket_id, t.created_at, fr.first_response_at,
	extract(epoch FROM fr.first_response_at - t.created_at)::double precision AS first_response_seconds
FROM tickets t
LEFT JOIN LATERAL (
	SELECT min(m.created_at) AS first_response_at
	FROM messages m
	WHERE m.ticket_id = t.id AND m.message_type = 'outbound' AND m.removed_at IS NULL AND m.created_at > t.created_at
) AS fr ON true
WHERE t.deleted_at IS NULL;
--> statement-breakpoint
COMMENT ON VIEW ticket_first_response IS 'How long did the customer wait for our first reply? One row per ticket not deleted. ticket_id, created_at: the ticket. first_response_at: created_at of the first outbound message strictly after the ticket was created (removed messages ignored); null when nobody has answered yet. first_response_seconds: first_response_at - created_at in seconds; null when not answered yet.';
--> statement-breakpoint
COMMENT ON COLUMN ticket_first_response.first_response_at IS 'first outbound message after creation; null when not answered yet';
--> statement-breakpoint
COMMENT ON COLUMN ticket_first_response.first_response_seconds IS 'seconds from creation to the first outbound message; null when not answered yet';
--> statement-breakpoint
CREATE VIEW ticket_resolution AS
SELECT id AS ticket_id, created_at, closed_at,
	extract(epoch FROM closed_at - created_at)::double precision AS resolution_seconds
FROM tickets
WHERE closed_at IS NOT NULL AND deleted_at IS NULL;
--> statement-breakpoint
COMMENT ON VIEW ticket_resolution IS 'How long did tickets take to resolve? One row per resolved ticket (closed_at is set) not deleted. ticket_id, created_at, closed_at: the ticket. resolution_seconds: closed_at - created_at in seconds.';
--> statement-breakpoint
COMMENT ON COLUMN ticket_resolution.resolution_seconds IS 'seconds from creation to closing';
--> statement-breakpoint
CREATE VIEW open_by_assignee AS
SELECT assigned_to ->> 'id' AS assignee_id,
	CASE WHEN assigned_to IS NULL OR jsonb_typeof(assigned_to) = 'null' THEN 'unassigned' ELSE assigned_to ->> 'name' END AS assignee_name,
	count(*) AS open_tickets,
	min(created_at) AS oldest_created_at,
	count(*) FILTER (WHERE has_unread_messages) AS unread_tickets
FROM tickets
WHERE in_open AND deleted_at IS NULL
GROUP BY 1, 2;
--> statement-breakpoint
COMMENT ON VIEW open_by_assignee IS 'Who holds the open tickets? One row per assignee of open tickets (in_open, not deleted). assignee_id, assignee_name: assigned_to ->> id / name; for unassigned tickets assignee_id is null and assignee_name is ''unassigned''. open_tickets: how many. oldest_created_at: created_at of the oldest of them. unread_tickets: how many of them have unread messages.';
--> statement-breakpoint
COMMENT ON COLUMN open_by_assignee.assignee_id IS 'assigned_to ->> id; null for unassigned tickets';
--> statement-breakpoint
COMMENT ON COLUMN open_by_assignee.assignee_name IS 'assigned_to ->> name; ''unassigned'' for unassigned tickets';
--> statement-breakpoint
COMMENT ON COLUMN open_by_assignee.oldest_created_at IS 'created_at of the oldest open ticket of this assignee';
--> statement-breakpoint
COMMENT ON COLUMN open_by_assignee.unread_tickets IS 'open tickets of this assignee with has_unread_messages';
--> statement-breakpoint
CREATE VIEW open_by_widget AS
SELECT widget_id, widget_name,
	count(*) AS open_tickets,
	min(created_at) AS oldest_created_at,
	count(*) FILTER (WHERE has_unread_messages) AS unread_tickets
FROM tickets
WHERE in_open AND deleted_at IS NULL
GROUP BY widget_id, widget_name;
--> statement-breakpoint
COMMENT ON VIEW open_by_widget IS 'Where do the open tickets come from? One row per widget of open tickets (in_open, not deleted). widget_id, widget_name: the ticket''s widget. open_tickets: how many. oldest_created_at: created_at of the oldest of them. unread_tickets: how many of them have unread messages.';
--> statement-breakpoint
COMMENT ON COLUMN open_by_widget.oldest_created_at IS 'created_at of the oldest open ticket from this widget';
--> statement-breakpoint
COMMENT ON COLUMN open_by_widget.unread_tickets IS 'open tickets from this widget with has_unread_messages';
--> statement-breakpoint
CREATE VIEW unread_waiting AS
SELECT t.id AS ticket_id, t.name, t.email, t.status, t.priority,
	t.assigned_to ->> 'id' AS assignee_id, t.assigned_to ->> 'name' AS assignee_name,
	t.widget_name, t.created_at,
	coalesce(li.last_inbound_at, t.last_contact_at) AS waiting_since,
	extract(epoch FROM now() - coalesce(li.last_inbound_at, t.last_contact_at))::double precision AS waiting_seconds
FROM tickets t
LEFT JOIN LATERAL (
	SELECT max(m.created_at) AS last_inbound_at
	FROM messages m
	WHERE m.ticket_id = t.id AND m.message_type = 'inbound' AND m.removed_at IS NULL
) AS li ON true
WHERE t.has_unread_messages AND t.in_open AND t.deleted_at IS NULL
ORDER BY waiting_since ASC NULLS LAST, t.id;
--> statement-breakpoint
COMMENT ON VIEW unread_waiting IS 'Which customers are waiting for us, longest first? One row per open ticket (in_open, not deleted) with unread messages. waiting_since: created_at of its last inbound message (removed messages ignored), or last_contact_at when no inbound message is stored. waiting_seconds: now() - waiting_since in seconds, at query time. assignee_id / assignee_name: assigned_to ->> id / name, null when unassigned.';
--> statement-breakpoint
COMMENT ON COLUMN unread_waiting.waiting_since IS 'last inbound message, or last_contact_at when none is stored';
--> statement-breakpoint
COMMENT ON COLUMN unread_waiting.waiting_seconds IS 'seconds from waiting_since to now(), at query time';
--> statement-breakpoint
CREATE VIEW reply_delivery AS
SELECT (m.created_at AT TIME ZONE 'UTC')::date AS day,
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
COMMENT ON VIEW reply_delivery IS 'Do our replies reach the customers? One row per UTC day of outbound messages (message_type outbound, by created_at), leaving out removed messages and deleted tickets. outbound_messages: all of them. sent: outbound_sent. delivered: outbound_delivered_at is set. bounced: outbound_bounced. spam_complaints: outbound_spam_complaint. errors: outbound_error is set.';
--> statement-breakpoint
COMMENT ON COLUMN reply_delivery.day IS 'UTC date of the outbound message''s created_at';
--> statement-breakpoint
COMMENT ON COLUMN reply_delivery.delivered IS 'outbound messages with outbound_delivered_at set';
--> statement-breakpoint
COMMENT ON COLUMN reply_delivery.errors IS 'outbound messages with outbound_error set';
