-- Who works on a reply_outbox row while it is claimed (its POST or its check in flight), so that after a crash a row
-- left `sending` is settled as soon as its claimer is provably gone rather than when its lease ends
-- (db/repos/outbox.ts, releaseAbandonedClaims): claimed_by names the claimer (a term of leadership, one command's run);
-- claimed_via says what proves it gone — 'embedded' (it had the embedded database open itself, which one process only
-- can) or 'leader' (it held the PostgreSQL leader lock in the session claimer_pid / claimer_started, as
-- pg_stat_activity shows it); null: nothing can. Every move that ends a claim clears the four columns.
ALTER TABLE "reply_outbox" ADD COLUMN "claimed_by" text;--> statement-breakpoint
ALTER TABLE "reply_outbox" ADD COLUMN "claimed_via" text;--> statement-breakpoint
ALTER TABLE "reply_outbox" ADD COLUMN "claimer_pid" integer;--> statement-breakpoint
ALTER TABLE "reply_outbox" ADD COLUMN "claimer_started" timestamp(6) with time zone;--> statement-breakpoint
ALTER TABLE "reply_outbox" ADD CONSTRAINT "reply_outbox_claimed_via_check" CHECK ("reply_outbox"."claimed_via" in ('embedded', 'leader'));--> statement-breakpoint
-- The claim columns are the daemon's too: an INSERT that sets one is forged (see 0005).
CREATE OR REPLACE FUNCTION reply_outbox_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	forged text[] := array_remove(ARRAY[
		CASE WHEN NEW.state IS DISTINCT FROM 'pending' THEN 'state' END,
		CASE WHEN NEW.attempts IS DISTINCT FROM 0 THEN 'attempts' END,
		CASE WHEN NEW.error IS NOT NULL THEN 'error' END,
		CASE WHEN NEW.message_id IS NOT NULL THEN 'message_id' END,
		CASE WHEN NEW.sent_at IS NOT NULL THEN 'sent_at' END,
		CASE WHEN NEW.next_attempt_at IS NOT NULL THEN 'next_attempt_at' END,
		CASE WHEN NEW.sending_since IS NOT NULL THEN 'sending_since' END,
		CASE WHEN NEW.claimed_by IS NOT NULL THEN 'claimed_by' END,
		CASE WHEN NEW.claimed_via IS NOT NULL THEN 'claimed_via' END,
		CASE WHEN NEW.claimer_pid IS NOT NULL THEN 'claimer_pid' END,
		CASE WHEN NEW.claimer_started IS NOT NULL THEN 'claimer_started' END
	], NULL);
BEGIN
	IF cardinality(forged) = 0 THEN
		NEW.inserted_as := 'request';
		RETURN NEW;
	END IF;
	NEW.inserted_as := 'forged';
	NEW.error := format('inserted with %s set, which only ticket-mirror writes (state %s): never delivered; insert ticket_id and message only',
		array_to_string(forged, ', '), coalesce(NEW.state, 'null'));
	NEW.state := 'failed';
	NEW.attempts := 0;
	NEW.message_id := NULL;
	NEW.sent_at := NULL;
	NEW.next_attempt_at := NULL;
	NEW.sending_since := NULL;
	NEW.claimed_by := NULL;
	NEW.claimed_via := NULL;
	NEW.claimer_pid := NULL;
	NEW.claimer_started := NULL;
	RETURN NEW;
END
$$;
