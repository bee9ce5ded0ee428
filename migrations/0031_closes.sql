-- Month-end closes: a company's period, its checklist's sign-offs and comments, the evidence a finished close keeps,
-- and a firm's settings of the checklist rules. One open close per company and period. The agent audit trail's
-- events can carry a SHA-256 of evidence (a finished close's), hashed with the event.
CREATE TABLE "closes" (
  "id" uuid PRIMARY KEY,
  "firm_id" uuid NOT NULL REFERENCES "firms"("id"),
  "organization_id" uuid NOT NULL REFERENCES "organizations"("id"),
  "period_start" date NOT NULL,
  "period_end" date NOT NULL,
  "status" text NOT NULL DEFAULT 'open',
  "opened_by_kind" text NOT NULL,
  "opened_by_id" text NOT NULL,
  "opened_at" timestamp with time zone NOT NULL DEFAULT now(),
  "finished_by_kind" text,
  "finished_by_id" text,
  "finished_at" timestamp with time zone,
  "evidence_sha256" text,
  "reopened_by_id" text,
  "reopened_at" timestamp with time zone,
  "reopen_reason" text,
  "updated_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "closes_status" CHECK ("status" in ('open', 'finished', 'reopened')),
  CONSTRAINT "closes_period" CHECK ("period_start" <= "period_end")
);
--> statement-breakpoint
CREATE INDEX "closes_org_period_idx" ON "closes" ("organization_id", "period_end");
--> statement-breakpoint
CREATE INDEX "closes_firm_period_idx" ON "closes" ("firm_id", "period_end");
--> statement-breakpoint
CREATE UNIQUE INDEX "closes_one_open" ON "closes" ("organization_id", "period_start", "period_end") WHERE "status" = 'open';
--> statement-breakpoint
CREATE TABLE "close_signoffs" (
  "close_id" uuid NOT NULL REFERENCES "closes"("id"),
  "organization_id" uuid NOT NULL REFERENCES "organizations"("id"),
  "item_key" text NOT NULL,
  "kind" text NOT NULL,
  "note" text NOT NULL,
  "signed_by_kind" text NOT NULL,
  "signed_by_id" text NOT NULL,
  "signed_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "close_signoffs_pkey" PRIMARY KEY ("close_id", "item_key")
);
--> statement-breakpoint
CREATE TABLE "close_comments" (
  "id" uuid PRIMARY KEY,
  "close_id" uuid NOT NULL REFERENCES "closes"("id"),
  "organization_id" uuid NOT NULL REFERENCES "organizations"("id"),
  "item_key" text,
  "author_kind" text NOT NULL,
  "author_id" text NOT NULL,
  "body" text NOT NULL,
  "created_at" timestamp with time zone NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE INDEX "close_comments_close_idx" ON "close_comments" ("close_id", "created_at");
--> statement-breakpoint
CREATE TABLE "close_evidence" (
  "close_id" uuid NOT NULL REFERENCES "closes"("id"),
  "organization_id" uuid NOT NULL REFERENCES "organizations"("id"),
  "name" text NOT NULL,
  "content_type" text NOT NULL,
  "content" bytea NOT NULL,
  "sha256" text NOT NULL,
  "created_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "close_evidence_pkey" PRIMARY KEY ("close_id", "name")
);
--> statement-breakpoint
CREATE TABLE "close_rule_settings" (
  "firm_id" uuid NOT NULL REFERENCES "firms"("id"),
  "kind" text NOT NULL,
  "enabled" boolean NOT NULL DEFAULT true,
  "thresholds" jsonb NOT NULL DEFAULT '{}'::jsonb,
  "updated_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "close_rule_settings_pkey" PRIMARY KEY ("firm_id", "kind")
);
--> statement-breakpoint
ALTER TABLE "agent_audit_events" ADD COLUMN "evidence_sha256" text;
