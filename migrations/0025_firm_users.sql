-- Users managed through the API. An invited user has no password until they take their single-use invitation link;
-- a deactivated user keeps their row (the audit trail and the keys they made name them) but can no longer sign in,
-- and nothing acting for them (a session, a token they approved, a key they made) is accepted. Members may be
-- limited to some companies of the firm: null is every organization, as on API keys and OAuth grants.
ALTER TABLE "users" ALTER COLUMN "password_hash" DROP NOT NULL;
--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "organization_ids" uuid[];
--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "deactivated_at" timestamp with time zone;
--> statement-breakpoint
-- Owners and admins see the whole firm; only a member's companies can be narrowed, and never to none.
ALTER TABLE "users" ADD CONSTRAINT "users_organizations_of_members" CHECK ("role" = 'member' OR "organization_ids" IS NULL);
--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_organizations_not_empty" CHECK (cardinality("organization_ids") > 0);
--> statement-breakpoint
CREATE TABLE "user_invitations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL REFERENCES "users"("id"),
	"token_hash" text NOT NULL UNIQUE,
	"created_by_user_id" uuid REFERENCES "users"("id"),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "user_invitations_user_idx" ON "user_invitations" USING btree ("user_id");
--> statement-breakpoint
-- Deactivating a user revokes the approvals they gave.
CREATE INDEX "oauth_grants_user_idx" ON "oauth_grants" USING btree ("user_id");
--> statement-breakpoint

-- A firm keeps at least one active owner (role owner, a password set, not deactivated) once it has one.
-- Why in the database: a firm without an owner can only be repaired from a shell, and the role changes come from the
-- API, the CLI and manual SQL alike. The API checks first, under the firm row's lock, to answer 409 LAST_OWNER; this
-- trigger takes the same lock, so two owners demoting each other at once cannot both pass: the second waits for the
-- first to commit and then sees it (each statement of a READ COMMITTED function reads a fresh snapshot).
-- Raises P0001 '<ERROR_CODE>: <message>' as the ledger rules do (packages/ledger/src/db-errors.ts).
CREATE FUNCTION users_keep_an_owner() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.role = 'owner' AND OLD.deactivated_at IS NULL AND OLD.password_hash IS NOT NULL
     AND NOT (NEW.role = 'owner' AND NEW.deactivated_at IS NULL AND NEW.password_hash IS NOT NULL) THEN
    PERFORM 1 FROM firms WHERE id = OLD.firm_id FOR UPDATE;
    IF NOT EXISTS (
      SELECT 1 FROM users
      WHERE firm_id = OLD.firm_id AND id <> OLD.id AND role = 'owner'
        AND deactivated_at IS NULL AND password_hash IS NOT NULL
    ) THEN
      RAISE EXCEPTION 'LAST_OWNER: the firm must keep an active owner; make another user owner first';
    END IF;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER users_keep_an_owner AFTER UPDATE OF role, deactivated_at, password_hash ON users
FOR EACH ROW EXECUTE FUNCTION users_keep_an_owner();
