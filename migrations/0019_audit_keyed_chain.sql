-- The agent audit chain is keyed from here on. A plain hash chain can be recomputed by anyone who can write to this
-- table, so an event with a `key_id` carries in `hash` an HMAC-SHA256 under that audit key (AUDIT_HMAC_KEYS), which
-- is kept outside the database; the id lets events written before a key rotation verify under their own key.
-- Events written before this migration keep no key id and their plain SHA-256 hash: verification checks them as
-- before and says at which event keyed protection begins.
ALTER TABLE "agent_audit_events" ADD COLUMN "key_id" text;
