-- Aggregator access tokens are sealed bound to their row from here on: the AES-256-GCM additional data names the
-- connection and its organization, so a sealed token copied into another connection's row (by anyone who can write to
-- this table) does not open there. `access_token_bound` says which rows are sealed that way. Rows sealed before this
-- migration keep false and still open as they were; the reseal needs the key, which the database never holds, so the
-- application reseals each such row, bound, under its lock the first time it reads the token.
-- A connection whose token does not open (moved, altered, or its key dropped) is `needs_relink`: only connecting the
-- bank again can give it a usable token.
ALTER TABLE "bank_feed_connections" ADD COLUMN "access_token_bound" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "bank_feed_connections" DROP CONSTRAINT "bank_feed_connections_status";--> statement-breakpoint
ALTER TABLE "bank_feed_connections" ADD CONSTRAINT "bank_feed_connections_status" CHECK ("status" in ('active', 'error', 'needs_relink', 'disconnected'));
