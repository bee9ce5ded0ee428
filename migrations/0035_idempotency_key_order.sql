-- A key's record is looked up by firm, organization and key, on its key space or the route pattern an earlier release
-- stored (`route in (...)`). With route before key in the primary key, that lookup walked every record of the
-- organization within the retention window, comparing keys: each idempotent write cost more the more the company had
-- written that day. Key before route: the lookup finds the one or two records of the key.
ALTER TABLE "idempotency_keys" DROP CONSTRAINT "idempotency_keys_pkey";--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("firm_id", "organization_id", "key", "route");
