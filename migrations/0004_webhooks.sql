-- Webhook subscriptions and deliveries.
--
-- Why some rules live in the database: several workers, in the API process and in separate
-- `npm run worker` processes, fan events out and deliver them at the same time. Receivers order and
-- de-duplicate by (subscription, sequence) and by event id, so the unique keys below make a duplicate
-- sequence number or a second delivery of one event to one subscription impossible whichever worker
-- has a bug or races another. A pending delivery always has its next attempt scheduled, so the
-- claim query, which looks only at due pending rows, cannot lose one. The other rules keep a
-- subscription's state readable for its owner (disabled means disabled_at says when).
CREATE TYPE "public"."webhook_delivery_status" AS ENUM('pending', 'succeeded', 'failed');--> statement-breakpoint
CREATE TABLE "webhook_subscriptions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"firm_id" uuid NOT NULL,
	"url" text NOT NULL,
	"description" text,
	"event_types" text[] NOT NULL,
	"organization_ids" uuid[],
	"enabled" boolean DEFAULT true NOT NULL,
	"disabled_reason" text,
	"disabled_at" timestamp with time zone,
	"secret" text NOT NULL,
	"previous_secret" text,
	"previous_secret_expires_at" timestamp with time zone,
	"last_sequence" bigint DEFAULT 0 NOT NULL,
	"failing_since" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_subscriptions_event_types_present" CHECK (cardinality("webhook_subscriptions"."event_types") > 0),
	CONSTRAINT "webhook_subscriptions_secret_format" CHECK ("webhook_subscriptions"."secret" like 'whsec\_%'),
	CONSTRAINT "webhook_subscriptions_disabled_consistent" CHECK ("webhook_subscriptions"."enabled" = ("webhook_subscriptions"."disabled_at" is null)),
	CONSTRAINT "webhook_subscriptions_previous_secret_consistent" CHECK (("webhook_subscriptions"."previous_secret" is null) = ("webhook_subscriptions"."previous_secret_expires_at" is null))
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" uuid PRIMARY KEY NOT NULL,
	"firm_id" uuid NOT NULL,
	"subscription_id" uuid NOT NULL,
	"event_id" uuid NOT NULL,
	"event_type" text NOT NULL,
	"organization_id" uuid,
	"payload" jsonb NOT NULL,
	"event_created_at" timestamp with time zone NOT NULL,
	"sequence" bigint NOT NULL,
	"status" "webhook_delivery_status" DEFAULT 'pending' NOT NULL,
	"attempt_count" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"locked_until" timestamp with time zone,
	"lease_token" uuid,
	"first_attempted_at" timestamp with time zone,
	"last_attempted_at" timestamp with time zone,
	"last_status_code" integer,
	"last_latency_ms" integer,
	"last_response_body" text,
	"last_error" text,
	"completed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_deliveries_subscription_sequence_key" UNIQUE("subscription_id","sequence"),
	CONSTRAINT "webhook_deliveries_subscription_event_key" UNIQUE("subscription_id","event_id"),
	CONSTRAINT "webhook_deliveries_pending_scheduled" CHECK (("webhook_deliveries"."status" = 'pending') = ("webhook_deliveries"."next_attempt_at" is not null)),
	CONSTRAINT "webhook_deliveries_response_excerpt" CHECK (char_length("webhook_deliveries"."last_response_body") <= 1024),
	CONSTRAINT "webhook_deliveries_sequence_positive" CHECK ("webhook_deliveries"."sequence" > 0)
);
--> statement-breakpoint
CREATE TABLE "webhook_delivery_attempts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"delivery_id" uuid NOT NULL,
	"attempt_number" integer NOT NULL,
	"attempted_at" timestamp with time zone NOT NULL,
	"outcome" text NOT NULL,
	"status_code" integer,
	"latency_ms" integer NOT NULL,
	"response_body" text,
	"error" text,
	CONSTRAINT "webhook_delivery_attempts_outcome" CHECK ("webhook_delivery_attempts"."outcome" in ('succeeded', 'retrying', 'failed', 'gone')),
	CONSTRAINT "webhook_delivery_attempts_response_excerpt" CHECK (char_length("webhook_delivery_attempts"."response_body") <= 1024)
);
--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "webhook_subscriptions_firm_id_firms_id_fk" FOREIGN KEY ("firm_id") REFERENCES "public"."firms"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_firm_id_firms_id_fk" FOREIGN KEY ("firm_id") REFERENCES "public"."firms"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_subscription_id_webhook_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."webhook_subscriptions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "webhook_delivery_attempts_delivery_id_webhook_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."webhook_deliveries"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_delivery_attempts_delivery_idx" ON "webhook_delivery_attempts" USING btree ("delivery_id","id");--> statement-breakpoint
CREATE INDEX "webhook_subscriptions_firm_idx" ON "webhook_subscriptions" USING btree ("firm_id","id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_subscription_idx" ON "webhook_deliveries" USING btree ("subscription_id","id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_pending_idx" ON "webhook_deliveries" USING btree ("subscription_id","sequence") WHERE "webhook_deliveries"."status" = 'pending';
