-- A reply_outbox row is a request to post a reply: a user or tool INSERTs (ticket_id, message) and the daemon owns
-- every other column. The trigger below judges each INSERT, whatever it says (the reader role of grant-reader may only
-- insert those two columns; an owner or a superuser can insert more): a row that sets any column only the daemon
-- writes — a state other than pending, attempts, an error, a message_id, sent_at, next_attempt_at, sending_since — is
-- not a request. It is kept for people to see, as `failed` with the reason in `error` and the daemon's columns
-- cleared, and marked inserted_as = 'forged': the deliverer never takes it (even if someone sets it back to pending),
-- and reconciliation never trusts its message_id or learns the token's user from it.
ALTER TABLE "reply_outbox" ADD COLUMN "inserted_as" text DEFAULT 'request' NOT NULL;--> statement-breakpoint
ALTER TABLE "reply_outbox" ADD CONSTRAINT "reply_outbox_inserted_as_check" CHECK ("reply_outbox"."inserted_as" in ('request', 'forged'));--> statement-breakpoint
CREATE FUNCTION reply_outbox_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	forged text[] := array_remove(ARRAY[
		CASE WHEN NEW.state IS DISTINCT FROM 'pending' THEN 'state' END,
		CASE WHEN NEW.attempts IS DISTINCT FROM 0 THEN 'attempts' END,
		CASE WHEN NEW.error IS NOT NULL THEN 'error' END,
		CASE WHEN NEW.message_id IS NOT NULL THEN 'message_id' END,
		CASE WHEN NEW.sent_at IS NOT NULL THEN 'sent_at' END,
		CASE WHEN NEW.next_attempt_at IS NOT NULL THEN 'next_attempt_at' END,
		CASE WHEN NEW.sending_since IS NOT NULL THEN 'sending_since' END
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
	RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER reply_outbox_inserted BEFORE INSERT ON reply_outbox FOR EACH ROW EXECUTE FUNCTION reply_outbox_inserted();
