-- Every list poll rewrites every ticket it lists (last_seen_at, state_seen_at): 100,000 row versions for a list of
-- 100,000. No index covers those columns, so PostgreSQL can make each new version a heap-only tuple (HOT) on its own
-- page, without touching the indexes, but only if the page has room for it: a poll updates all of a page's rows in one
-- transaction, so a page must stay half free. Without that room the update writes every index again and bloats them.
-- Applies to pages written from now on; an existing table converges as its rows are rewritten.
ALTER TABLE "tickets" SET (fillfactor = 50);
