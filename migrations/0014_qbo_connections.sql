-- QuickBooks Online connections: one per organization, with its OAuth tokens sealed at rest (AES-256-GCM under
-- QBO_TOKEN_ENCRYPTION_KEY, bound to the organization and the column), and the states of authorizations under way.
-- `version` counts token rotations: a refresh takes the row's lock, so two processes refreshing at once take turns
-- and the second uses the first one's tokens instead of spending the refresh token again.
CREATE TABLE "qbo_connections" (
	"organization_id" uuid PRIMARY KEY NOT NULL REFERENCES "public"."organizations"("id"),
	"firm_id" uuid NOT NULL REFERENCES "public"."firms"("id"),
	"realm_id" text NOT NULL,
	"access_token" text NOT NULL,
	"refresh_token" text NOT NULL,
	"access_expires_at" timestamp with time zone NOT NULL,
	"refresh_expires_at" timestamp with time zone,
	"status" text DEFAULT 'connected' NOT NULL,
	"last_error" text,
	"version" integer DEFAULT 1 NOT NULL,
	"connected_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "qbo_connections_realm_key" UNIQUE("realm_id"),
	CONSTRAINT "qbo_connections_status" CHECK ("status" in ('connected', 'needs_reauth', 'disconnected', 'error'))
);
--> statement-breakpoint
CREATE TABLE "qbo_oauth_states" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"firm_id" uuid NOT NULL REFERENCES "public"."firms"("id"),
	"organization_id" uuid NOT NULL REFERENCES "public"."organizations"("id"),
	"user_id" uuid,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
