-- An Idempotency-Key names one request of an organization: its method, its path (with the ids in it) and its body.
-- Requests to the API share one key space per firm and organization (route 'api'), so the primary key lets a key
-- hold one record whatever path it was sent to, and `target` keeps the method and path it was first used for: the
-- same key on another method or path is refused, never answered with another resource's response. Records written
-- before this kept the route pattern in `route` and no target; they are still looked up under that pattern (and so
-- still replay) until they expire.
ALTER TABLE "idempotency_keys" ADD COLUMN "target" text;
--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_api_target" CHECK ("route" <> 'api' or "target" is not null);
