-- Aggregator webhooks accepted, each kept until its signature would no longer be accepted (Plaid: five minutes after
-- it was issued, plus a margin for the clocks of different hosts). A second delivery of the same signed webhook in that
-- window is recognised by whichever API process receives it: the primary key makes its insert conflict, so the rule
-- holds across processes and cannot depend on any one process's memory. Rows past `expires_at` are deleted by the
-- webhook route as it accepts others.
CREATE TABLE "aggregator_webhook_deliveries" (
	"provider" text NOT NULL,
	"delivery_id" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "aggregator_webhook_deliveries_pkey" PRIMARY KEY("provider","delivery_id")
);
--> statement-breakpoint
CREATE INDEX "aggregator_webhook_deliveries_expires_idx" ON "aggregator_webhook_deliveries" USING btree ("expires_at");
