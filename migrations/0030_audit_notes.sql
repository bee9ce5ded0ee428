-- A person's note on an agent audit event (an approver's note on a proposal's decision), hashed with the event's
-- other fields so that changing or removing it breaks the chain. Events written before it carry none and hash as
-- they did. Pending proposals are found by their expiry by the background job that expires them.
ALTER TABLE "agent_audit_events" ADD COLUMN "note" text;
--> statement-breakpoint
CREATE INDEX "agent_proposals_pending_expiry" ON "agent_proposals" ("expires_at") WHERE "status" = 'pending';
