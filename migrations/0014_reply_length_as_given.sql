-- The spec's rule for a reply, to the letter: at least 3 characters, counted on the text as given (it is sent as
-- given). Before, the CHECK trimmed spaces (btrim) and the daemon trimmed every blank, so '  ab  ' was refused and
-- E'\t\tab' accepted here but failed unsent by the daemon. Every row the old CHECK accepted passes the new one.
ALTER TABLE "reply_outbox" DROP CONSTRAINT "reply_outbox_message_check";--> statement-breakpoint
ALTER TABLE "reply_outbox" ADD CONSTRAINT "reply_outbox_message_check" CHECK (char_length("reply_outbox"."message") >= 3);