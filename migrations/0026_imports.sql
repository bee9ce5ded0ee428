-- History and charts brought in from files: the import itself (a job with progress and a lease for the worker that
-- posts it), the rows of its file as parsed (staged, so a background run posts them in batches and resumes after a
-- crash where done_rows says), and the rows it refused.
--
-- Why in the database: an imported entry is unique per company by its reference (journal_entries_import_reference),
-- so no retry, no second worker and no second upload of the same history can post it twice, whatever the code does;
-- and a file is imported once per company and kind (imports_file_once) unless its import failed (a file still being
-- received is not counted yet).
--
-- The new entry source value is added here and not used by this migration: a value added by ALTER TYPE cannot be
-- used in the transaction that adds it.
ALTER TYPE "public"."entry_source" ADD VALUE IF NOT EXISTS 'import';--> statement-breakpoint
CREATE TABLE "imports" (
	"id" uuid PRIMARY KEY NOT NULL,
	"firm_id" uuid NOT NULL REFERENCES "public"."firms"("id"),
	"organization_id" uuid NOT NULL REFERENCES "public"."organizations"("id"),
	"kind" text NOT NULL,
	"format" text NOT NULL,
	"atomicity" text NOT NULL,
	"file_sha256" text,
	"file_bytes" bigint DEFAULT 0 NOT NULL,
	"status" text DEFAULT 'receiving' NOT NULL,
	"total_rows" integer DEFAULT 0 NOT NULL,
	"total_entries" integer DEFAULT 0 NOT NULL,
	"done_rows" integer DEFAULT 0 NOT NULL,
	"failed_rows" integer DEFAULT 0 NOT NULL,
	"entries_posted" integer DEFAULT 0 NOT NULL,
	"accounts_created" integer DEFAULT 0 NOT NULL,
	"posted_through_entry" integer DEFAULT 0 NOT NULL,
	"error_count" integer DEFAULT 0 NOT NULL,
	"error_summary" text,
	"created_by_kind" text NOT NULL,
	"created_by_id" text NOT NULL,
	"request_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"locked_by" text,
	"locked_until" timestamp with time zone,
	CONSTRAINT "imports_org_id_key" UNIQUE("organization_id","id"),
	CONSTRAINT "imports_kind" CHECK ("kind" in ('journal', 'accounts')),
	CONSTRAINT "imports_format" CHECK ("format" in ('csv', 'hledger') and ("kind" = 'journal' or "format" = 'csv')),
	CONSTRAINT "imports_atomicity" CHECK ("atomicity" in ('file', 'entry')),
	CONSTRAINT "imports_status" CHECK ("status" in ('receiving', 'queued', 'running', 'completed', 'failed')),
	CONSTRAINT "imports_file_known" CHECK ("status" = 'receiving' or "file_sha256" is not null),
	CONSTRAINT "imports_counts" CHECK ("done_rows" >= 0 and "failed_rows" >= 0 and "done_rows" + "failed_rows" <= "total_rows")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "imports_file_once" ON "imports" USING btree ("organization_id","kind","file_sha256") WHERE "status" in ('queued', 'running', 'completed');--> statement-breakpoint
CREATE INDEX "imports_org_created_idx" ON "imports" USING btree ("organization_id","created_at" DESC,"id" DESC);--> statement-breakpoint
CREATE INDEX "imports_pending_idx" ON "imports" USING btree ("created_at") WHERE "status" in ('queued', 'running');--> statement-breakpoint
-- The rows of a journal import's file, parsed, grouped into entries (entry_no in file order) and checked: what the
-- posting inserts set-wise into journal_entries and journal_lines. The ids are chosen when the row is staged, so a
-- batch that is posted again after a crash would write the same ids and be refused rather than doubled. A logged
-- table, not UNLOGGED: an unlogged table is emptied when the database restarts after a crash, and a queued import
-- must still be there to resume.
CREATE TABLE "import_rows" (
	"import_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"entry_no" integer NOT NULL,
	"line_no" integer NOT NULL,
	"line" integer NOT NULL,
	"entry_id" uuid NOT NULL,
	"line_id" uuid NOT NULL,
	"entry_date" date NOT NULL,
	"reference" text NOT NULL,
	"memo" text,
	"payee_name" text,
	"account_id" uuid NOT NULL,
	"description" text,
	"amount_cents" bigint NOT NULL,
	CONSTRAINT "import_rows_pkey" PRIMARY KEY("import_id","entry_no","line_no"),
	CONSTRAINT "import_rows_import_fk" FOREIGN KEY ("organization_id","import_id")
		REFERENCES "public"."imports"("organization_id","id") ON DELETE CASCADE
);
--> statement-breakpoint
CREATE INDEX "import_rows_reference_idx" ON "import_rows" USING btree ("import_id","reference");--> statement-breakpoint
-- The rows a file was refused for: line (1 = the first line of the file), column and why. At most the first
-- thousand of an import are kept; imports.error_count counts them all.
CREATE TABLE "import_row_errors" (
	"import_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"seq" integer NOT NULL,
	"line" integer NOT NULL,
	"column" text,
	"message" text NOT NULL,
	CONSTRAINT "import_row_errors_pkey" PRIMARY KEY("import_id","seq"),
	CONSTRAINT "import_row_errors_import_fk" FOREIGN KEY ("organization_id","import_id")
		REFERENCES "public"."imports"("organization_id","id") ON DELETE CASCADE
);
--> statement-breakpoint
ALTER TABLE "journal_entries" ADD COLUMN "import_id" uuid;--> statement-breakpoint
ALTER TABLE "journal_entries" ADD CONSTRAINT "journal_entries_import_fk" FOREIGN KEY ("organization_id","import_id") REFERENCES "public"."imports"("organization_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "journal_entries_import_reference" ON "journal_entries" USING btree ("organization_id","reference") WHERE "import_id" is not null;
