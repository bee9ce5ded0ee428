-- The agent gateway: clients as agents see them, record versions (the platform's SyncToken) and the agents'
-- hash-chained audit trail.
--
-- Why some of it lives in the database:
--   * every organization is a client of the gateway from the moment it exists, whichever path created it (the
--     demo seed, the CLI, a future onboarding route), so a trigger gives it its client row with agent access
--     `none`: an agent sees nothing the firm has not opened to it;
--   * a record's version (its SyncToken) must grow on every change, including changes made through the
--     partner API, by workers or by hand; triggers on the tables the gateway presents count every UPDATE, so
--     no write path can change a record without an agent holding an old SyncToken noticing.
-- Each statement is its own chunk because PGlite runs one statement per query.
CREATE TABLE "acct_clients" (
	"organization_id" uuid PRIMARY KEY NOT NULL REFERENCES "organizations"("id"),
	"firm_id" uuid NOT NULL REFERENCES "firms"("id"),
	"platform" text DEFAULT 'embedded' NOT NULL,
	"acct_company_id" text NOT NULL,
	"status" text DEFAULT 'connected' NOT NULL,
	"agent_access" text DEFAULT 'none' NOT NULL,
	"last_sync_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "acct_clients_platform" CHECK ("platform" in ('embedded', 'qbo')),
	CONSTRAINT "acct_clients_status" CHECK ("status" in ('connected', 'needs_reauth', 'disconnected', 'error')),
	CONSTRAINT "acct_clients_agent_access" CHECK ("agent_access" in ('none', 'read', 'read_write')),
	CONSTRAINT "acct_clients_company_key" UNIQUE ("platform", "acct_company_id")
);
--> statement-breakpoint
CREATE INDEX "acct_clients_firm_idx" ON "acct_clients" ("firm_id");
--> statement-breakpoint
CREATE FUNCTION acct_clients_for_new_organization() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO acct_clients (organization_id, firm_id, acct_company_id)
  VALUES (NEW.id, NEW.firm_id, NEW.id::text)
  ON CONFLICT (organization_id) DO NOTHING;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER acct_clients_for_new_organization AFTER INSERT ON organizations
FOR EACH ROW EXECUTE FUNCTION acct_clients_for_new_organization();
--> statement-breakpoint
INSERT INTO acct_clients (organization_id, firm_id, acct_company_id)
SELECT id, firm_id, id::text FROM organizations
ON CONFLICT (organization_id) DO NOTHING;
--> statement-breakpoint
-- A record that was never updated has no row: version 0, last updated when it was created.
CREATE TABLE "record_versions" (
	"organization_id" uuid NOT NULL,
	"record_id" uuid NOT NULL,
	"version" integer NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "record_versions_pkey" PRIMARY KEY ("organization_id", "record_id")
);
--> statement-breakpoint
CREATE FUNCTION record_versions_bump() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO record_versions AS v (organization_id, record_id, version, updated_at)
  VALUES (NEW.organization_id, NEW.id, 1, clock_timestamp())
  ON CONFLICT (organization_id, record_id)
  DO UPDATE SET version = v.version + 1, updated_at = clock_timestamp();
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- An organization is its own tenant: its CompanyInfo's version is kept under its own id.
CREATE FUNCTION record_versions_bump_organization() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO record_versions AS v (organization_id, record_id, version, updated_at)
  VALUES (NEW.id, NEW.id, 1, clock_timestamp())
  ON CONFLICT (organization_id, record_id)
  DO UPDATE SET version = v.version + 1, updated_at = clock_timestamp();
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER record_versions_bump AFTER UPDATE ON accounts
FOR EACH ROW EXECUTE FUNCTION record_versions_bump();
--> statement-breakpoint
CREATE TRIGGER record_versions_bump AFTER UPDATE ON contacts
FOR EACH ROW EXECUTE FUNCTION record_versions_bump();
--> statement-breakpoint
CREATE TRIGGER record_versions_bump AFTER UPDATE ON items
FOR EACH ROW EXECUTE FUNCTION record_versions_bump();
--> statement-breakpoint
CREATE TRIGGER record_versions_bump AFTER UPDATE ON tax_rates
FOR EACH ROW EXECUTE FUNCTION record_versions_bump();
--> statement-breakpoint
CREATE TRIGGER record_versions_bump AFTER UPDATE ON documents
FOR EACH ROW EXECUTE FUNCTION record_versions_bump();
--> statement-breakpoint
CREATE TRIGGER record_versions_bump AFTER UPDATE ON journal_entries
FOR EACH ROW EXECUTE FUNCTION record_versions_bump();
--> statement-breakpoint
CREATE TRIGGER record_versions_bump AFTER UPDATE ON organizations
FOR EACH ROW EXECUTE FUNCTION record_versions_bump_organization();
--> statement-breakpoint
-- Each firm's agent audit events form one chain: an event's hash covers its own fields and the hash of the
-- event before it (seq - 1), so an edited, inserted or deleted event breaks the chain at that point.
CREATE TABLE "agent_audit_events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"firm_id" uuid NOT NULL REFERENCES "firms"("id"),
	"seq" bigint NOT NULL,
	"organization_id" uuid REFERENCES "organizations"("id"),
	"actor_kind" text NOT NULL,
	"actor_id" text NOT NULL,
	"actor_name" text,
	"operation" text NOT NULL,
	"entity_type" text,
	"entity_id" text,
	"outcome" text NOT NULL,
	"status_code" integer NOT NULL,
	"error_code" text,
	"request_id" text,
	"dry_run" boolean DEFAULT false NOT NULL,
	"sync_token_before" text,
	"sync_token_after" text,
	"created_at" timestamp with time zone NOT NULL,
	"prev_hash" text NOT NULL,
	"hash" text NOT NULL,
	CONSTRAINT "agent_audit_events_firm_seq_key" UNIQUE ("firm_id", "seq"),
	CONSTRAINT "agent_audit_events_outcome" CHECK ("outcome" in ('succeeded', 'refused', 'failed'))
);
--> statement-breakpoint
CREATE INDEX "agent_audit_events_org_idx" ON "agent_audit_events" ("organization_id", "seq");
