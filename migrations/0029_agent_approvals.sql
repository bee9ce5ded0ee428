-- Agent write approvals. A policy says which of an agent's writes wait for a person: the firm's default (scope
-- `firm`, subject ''), a client's (scope `client`, subject the organization id) and an agent's (scope `agent`,
-- subject the OAuth client id or the API key id). A proposal is a write the policy held: the request as sent, its
-- dry-run preview, and what became of it. The status moves only forward (pending to approved, rejected or expired;
-- approved to executed or failed), which the trigger below keeps whatever code writes the row.
CREATE TABLE "approval_policies" (
  "firm_id" uuid NOT NULL REFERENCES "firms"("id"),
  "scope" text NOT NULL,
  "subject_id" text NOT NULL DEFAULT '',
  "policy" jsonb NOT NULL,
  "updated_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "approval_policies_pkey" PRIMARY KEY ("firm_id", "scope", "subject_id"),
  CONSTRAINT "approval_policies_scope" CHECK ("scope" in ('firm', 'client', 'agent')),
  CONSTRAINT "approval_policies_subject" CHECK (("scope" = 'firm') = ("subject_id" = ''))
);
--> statement-breakpoint
CREATE TABLE "agent_proposals" (
  "id" uuid PRIMARY KEY,
  "firm_id" uuid NOT NULL REFERENCES "firms"("id"),
  "organization_id" uuid NOT NULL REFERENCES "organizations"("id"),
  "actor_kind" text NOT NULL,
  "actor_id" text NOT NULL,
  "agent_client_id" text NOT NULL,
  "scopes" text[] NOT NULL,
  "entity" text NOT NULL,
  "transaction_type" text,
  "operation" text NOT NULL,
  "target_id" text,
  "request" jsonb NOT NULL,
  "idempotency_key" text,
  "reason" text,
  "matched_rules" text[] NOT NULL,
  "preview" jsonb NOT NULL,
  "status" text NOT NULL DEFAULT 'pending',
  "decided_by_kind" text,
  "decided_by_id" text,
  "decision_note" text,
  "decided_at" timestamp with time zone,
  "result_status" integer,
  "result_body" jsonb,
  "failure_code" text,
  "failure_reason" text,
  "executed_at" timestamp with time zone,
  "expires_at" timestamp with time zone NOT NULL,
  "created_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "agent_proposals_status" CHECK ("status" in ('pending', 'approved', 'rejected', 'executed', 'failed', 'expired')),
  CONSTRAINT "agent_proposals_operation" CHECK ("operation" in ('create', 'update', 'delete'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "agent_proposals_key" ON "agent_proposals" ("firm_id", "organization_id", "actor_kind", "actor_id", "idempotency_key") WHERE "idempotency_key" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX "agent_proposals_firm_status" ON "agent_proposals" ("firm_id", "status", "created_at" DESC, "id" DESC);
--> statement-breakpoint
CREATE FUNCTION agent_proposals_check_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
    (OLD.status = 'pending' AND NEW.status IN ('approved', 'rejected', 'expired'))
    OR (OLD.status = 'approved' AND NEW.status IN ('executed', 'failed'))
  ) THEN
    RAISE EXCEPTION 'agent proposal % cannot move from % to %', OLD.id, OLD.status, NEW.status
      USING ERRCODE = 'check_violation', CONSTRAINT = 'agent_proposals_transition';
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER agent_proposals_transition
BEFORE UPDATE OF status ON agent_proposals
FOR EACH ROW EXECUTE FUNCTION agent_proposals_check_transition();
