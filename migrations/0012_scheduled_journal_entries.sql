-- Journal entries posted on a schedule: the template with its schedule, and one run per occurrence (unique), posted
-- with its entry or failed with the reason. The worker claims due templates with FOR UPDATE SKIP LOCKED.
CREATE TABLE "scheduled_journal_entries" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL REFERENCES "public"."organizations"("id"),
	"name" text NOT NULL,
	"memo" text,
	"reference" text,
	"lines" jsonb NOT NULL,
	"frequency" text NOT NULL,
	"interval" integer DEFAULT 1 NOT NULL,
	"day_of_month" integer,
	"day_of_week" integer,
	"weekend_rule" text DEFAULT 'none' NOT NULL,
	"start_date" date NOT NULL,
	"end_date" date,
	"status" text DEFAULT 'active' NOT NULL,
	"next_occurrence" date,
	"retry_at" timestamp with time zone,
	"failures" integer DEFAULT 0 NOT NULL,
	"last_error" jsonb,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "scheduled_journal_entries_org_id_key" UNIQUE("organization_id","id"),
	CONSTRAINT "scheduled_journal_entries_schedule" CHECK ("frequency" in ('weekly', 'monthly', 'quarterly', 'yearly') and "interval" between 1 and 120
        and "weekend_rule" in ('none', 'previous_business_day', 'next_business_day')
        and "status" in ('active', 'paused', 'ended', 'deleted')
        and ("end_date" is null or "end_date" >= "start_date")
        and (("frequency" = 'weekly' and "day_of_week" between 1 and 7 and "day_of_month" is null)
          or ("frequency" <> 'weekly' and "day_of_week" is null and "day_of_month" between 0 and 31)))
);
--> statement-breakpoint
CREATE INDEX "scheduled_journal_entries_due_idx" ON "scheduled_journal_entries" USING btree ("next_occurrence") WHERE "status" = 'active';--> statement-breakpoint
CREATE TABLE "scheduled_entry_runs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"schedule_id" uuid NOT NULL,
	"occurrence" date NOT NULL,
	"entry_date" date NOT NULL,
	"status" text NOT NULL,
	"journal_entry_id" uuid REFERENCES "public"."journal_entries"("id"),
	"attempts" integer DEFAULT 1 NOT NULL,
	"error_code" text,
	"error_message" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "scheduled_entry_runs_occurrence_key" UNIQUE("schedule_id","occurrence"),
	CONSTRAINT "scheduled_entry_runs_status" CHECK ("status" in ('posted', 'failed')
      and ("status" <> 'posted' or "journal_entry_id" is not null)),
	CONSTRAINT "scheduled_entry_runs_schedule_fk" FOREIGN KEY ("organization_id","schedule_id") REFERENCES "public"."scheduled_journal_entries"("organization_id","id")
);
--> statement-breakpoint
CREATE INDEX "scheduled_entry_runs_schedule_idx" ON "scheduled_entry_runs" USING btree ("organization_id","schedule_id","occurrence");
