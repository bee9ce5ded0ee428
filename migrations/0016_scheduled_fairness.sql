-- When a worker last ran an occurrence of a scheduled entry. A round takes firms, then their templates, least recently
-- served first, so a backlog capped at one round's share still leaves the next round to those that waited.
ALTER TABLE "scheduled_journal_entries" ADD COLUMN "last_run_at" timestamp with time zone;
