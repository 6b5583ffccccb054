CREATE TABLE "api_requests" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp(6) with time zone NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"status" integer,
	"duration_ms" integer,
	"kind" text,
	"ratelimit_remaining" integer
);
--> statement-breakpoint
CREATE TABLE "attachments" (
	"id" text PRIMARY KEY NOT NULL,
	"ticket_id" text NOT NULL,
	"message_id" text,
	"name" text,
	"mime_type" text,
	"size" bigint,
	"removed_at" timestamp(6) with time zone
);
--> statement-breakpoint
CREATE TABLE "list_polls" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"list" text NOT NULL,
	"at" timestamp(6) with time zone NOT NULL,
	"items" integer NOT NULL,
	"changes" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" text PRIMARY KEY NOT NULL,
	"ticket_id" text NOT NULL,
	"message_type" text,
	"ticket_status" text,
	"message" text,
	"outbound_sent" boolean,
	"outbound_delivered_at" timestamp(6) with time zone,
	"outbound_bounced" boolean,
	"outbound_spam_complaint" boolean,
	"outbound_error" text,
	"created_at" timestamp(6) with time zone,
	"author" jsonb,
	"removed_at" timestamp(6) with time zone
);
--> statement-breakpoint
CREATE TABLE "reply_outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"ticket_id" text NOT NULL,
	"message" text NOT NULL,
	"requested_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"error" text,
	"message_id" text,
	"sent_at" timestamp(6) with time zone,
	"next_attempt_at" timestamp(6) with time zone,
	"sending_since" timestamp(6) with time zone,
	CONSTRAINT "reply_outbox_state_check" CHECK ("reply_outbox"."state" in ('pending', 'sending', 'sent', 'failed')),
	CONSTRAINT "reply_outbox_message_check" CHECK (char_length(btrim("reply_outbox"."message")) >= 3),
	CONSTRAINT "reply_outbox_ticket_check" CHECK (char_length(btrim("reply_outbox"."ticket_id")) > 0)
);
--> statement-breakpoint
CREATE TABLE "sync_runs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"started_at" timestamp(6) with time zone NOT NULL,
	"finished_at" timestamp(6) with time zone,
	"requests" integer DEFAULT 0 NOT NULL,
	"tickets_changed" integer DEFAULT 0 NOT NULL,
	"details_fetched" integer DEFAULT 0 NOT NULL,
	"error" text
);
--> statement-breakpoint
CREATE TABLE "ticket_history" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"ticket_id" text NOT NULL,
	"status" text,
	"priority" text,
	"assigned_to" jsonb,
	"in_open" boolean NOT NULL,
	"in_self" boolean NOT NULL,
	"in_unassigned" boolean NOT NULL,
	"in_resolved" boolean NOT NULL,
	"valid_from" timestamp(6) with time zone NOT NULL,
	"valid_to" timestamp(6) with time zone,
	"changed_after" timestamp(6) with time zone
);
--> statement-breakpoint
CREATE TABLE "tickets" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text,
	"email" text,
	"status" text,
	"priority" text,
	"has_unread_messages" boolean,
	"replied_to_customer" boolean,
	"closed_at" timestamp(6) with time zone,
	"last_contact_at" timestamp(6) with time zone,
	"created_at" timestamp(6) with time zone,
	"updated_at" timestamp(6) with time zone,
	"assigned_to" jsonb,
	"widget_id" text,
	"widget_name" text,
	"ai_summary" text,
	"in_open" boolean DEFAULT false NOT NULL,
	"in_self" boolean DEFAULT false NOT NULL,
	"in_unassigned" boolean DEFAULT false NOT NULL,
	"in_resolved" boolean DEFAULT false NOT NULL,
	"first_seen_at" timestamp(6) with time zone NOT NULL,
	"last_seen_at" timestamp(6) with time zone NOT NULL,
	"detail_synced_at" timestamp(6) with time zone,
	"missing_since" timestamp(6) with time zone,
	"deleted_at" timestamp(6) with time zone,
	"raw" jsonb,
	"detail_due_since" timestamp(6) with time zone,
	"state_seen_at" timestamp(6) with time zone,
	"detail_failures" integer DEFAULT 0 NOT NULL,
	"detail_retry_after" timestamp(6) with time zone
);
--> statement-breakpoint
ALTER TABLE "attachments" ADD CONSTRAINT "attachments_ticket_id_tickets_id_fk" FOREIGN KEY ("ticket_id") REFERENCES "tickets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "attachments" ADD CONSTRAINT "attachments_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_ticket_id_tickets_id_fk" FOREIGN KEY ("ticket_id") REFERENCES "tickets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ticket_history" ADD CONSTRAINT "ticket_history_ticket_id_tickets_id_fk" FOREIGN KEY ("ticket_id") REFERENCES "tickets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_requests_at_idx" ON "api_requests" USING btree ("at");--> statement-breakpoint
CREATE INDEX "attachments_ticket_idx" ON "attachments" USING btree ("ticket_id");--> statement-breakpoint
CREATE INDEX "attachments_message_idx" ON "attachments" USING btree ("message_id");--> statement-breakpoint
CREATE INDEX "list_polls_list_idx" ON "list_polls" USING btree ("list","at");--> statement-breakpoint
CREATE INDEX "messages_ticket_idx" ON "messages" USING btree ("ticket_id","created_at");--> statement-breakpoint
CREATE INDEX "reply_outbox_open_idx" ON "reply_outbox" USING btree ("id") WHERE state in ('pending', 'sending');--> statement-breakpoint
CREATE INDEX "sync_runs_started_idx" ON "sync_runs" USING btree ("started_at");--> statement-breakpoint
CREATE INDEX "ticket_history_ticket_idx" ON "ticket_history" USING btree ("ticket_id","valid_from");--> statement-breakpoint
CREATE UNIQUE INDEX "ticket_history_current_idx" ON "ticket_history" USING btree ("ticket_id") WHERE valid_to is null;--> statement-breakpoint
CREATE INDEX "ticket_history_valid_idx" ON "ticket_history" USING btree ("valid_from","valid_to");--> statement-breakpoint
CREATE INDEX "tickets_created_at_idx" ON "tickets" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "tickets_detail_due_idx" ON "tickets" USING btree ("detail_due_since") WHERE detail_due_since is not null;--> statement-breakpoint
CREATE INDEX "tickets_detail_synced_idx" ON "tickets" USING btree ("detail_synced_at");--> statement-breakpoint
CREATE INDEX "tickets_open_idx" ON "tickets" USING btree ("in_open") WHERE in_open;