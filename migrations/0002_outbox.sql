-- One posted message answers one outbox row: reconciliation after a crash matches a row with a message of the
-- ticket's detail, and two rows (the same text inserted twice) must never both claim the same message.
CREATE UNIQUE INDEX "reply_outbox_message_id_idx" ON "reply_outbox" USING btree ("message_id") WHERE message_id is not null;
