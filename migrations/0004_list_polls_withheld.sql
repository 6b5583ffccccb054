-- A list answer that would take more than half of a list's tickets out of it (at least 10) waits for the next poll
-- to confirm it: the poll records how many leaves it withheld, so that a restart keeps the pending confirmation.
ALTER TABLE "list_polls" ADD COLUMN "withheld" integer DEFAULT 0 NOT NULL;
