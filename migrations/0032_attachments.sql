-- Source documents (receipts, invoices, statements) attached to what they prove. Every table carries the tenant in its
-- primary key and in each foreign key to another tenant table, so the schema can be distributed by organization_id.
-- A blob is a company's stored file, content-addressed by SHA-256 (one per company and hash once received); its bytes
-- live in attachment_chunks (the Postgres store) or in object storage (the S3 store). An attachment is a file as
-- someone uploaded it (its name is data, never a path); links tie it to the records it proves, one column per kind of
-- record so that each link is a real foreign key and a linked record cannot disappear under it.
CREATE TABLE "attachment_blobs" (
  "organization_id" uuid NOT NULL REFERENCES "organizations"("id"),
  "id" uuid NOT NULL,
  "store" text NOT NULL,
  "status" text NOT NULL DEFAULT 'receiving',
  "sha256" text,
  "size_bytes" bigint NOT NULL DEFAULT 0,
  "content_type" text,
  "created_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "attachment_blobs_pkey" PRIMARY KEY ("organization_id", "id"),
  CONSTRAINT "attachment_blobs_store" CHECK ("store" in ('postgres', 's3')),
  CONSTRAINT "attachment_blobs_status" CHECK ("status" in ('receiving', 'stored')),
  CONSTRAINT "attachment_blobs_stored_hash" CHECK (("status" = 'stored') = ("sha256" is not null))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "attachment_blobs_org_sha256" ON "attachment_blobs" ("organization_id", "sha256") WHERE "sha256" is not null;
--> statement-breakpoint
CREATE INDEX "attachment_blobs_receiving_idx" ON "attachment_blobs" ("created_at") WHERE "status" = 'receiving';
--> statement-breakpoint
CREATE TABLE "attachment_chunks" (
  "organization_id" uuid NOT NULL,
  "blob_id" uuid NOT NULL,
  "seq" integer NOT NULL,
  "data" bytea NOT NULL,
  CONSTRAINT "attachment_chunks_pkey" PRIMARY KEY ("organization_id", "blob_id", "seq"),
  CONSTRAINT "attachment_chunks_blob_fk" FOREIGN KEY ("organization_id", "blob_id")
    REFERENCES "attachment_blobs"("organization_id", "id") ON DELETE CASCADE
);
--> statement-breakpoint
CREATE TABLE "attachments" (
  "organization_id" uuid NOT NULL REFERENCES "organizations"("id"),
  "id" uuid NOT NULL,
  "blob_id" uuid,
  "file_name" text NOT NULL,
  "content_type" text NOT NULL,
  "size_bytes" bigint NOT NULL,
  "sha256" text NOT NULL,
  "note" text,
  "created_by_kind" text NOT NULL,
  "created_by_id" text NOT NULL,
  "created_at" timestamp with time zone NOT NULL DEFAULT now(),
  "deleted_at" timestamp with time zone,
  CONSTRAINT "attachments_pkey" PRIMARY KEY ("organization_id", "id"),
  CONSTRAINT "attachments_blob_fk" FOREIGN KEY ("organization_id", "blob_id")
    REFERENCES "attachment_blobs"("organization_id", "id"),
  -- The file goes only with a deleted attachment nothing posted refers to.
  CONSTRAINT "attachments_blob_kept" CHECK ("blob_id" is not null or "deleted_at" is not null)
);
--> statement-breakpoint
CREATE INDEX "attachments_org_created_idx" ON "attachments" ("organization_id", "created_at", "id");
--> statement-breakpoint
CREATE INDEX "attachments_blob_idx" ON "attachments" ("organization_id", "blob_id");
--> statement-breakpoint
CREATE TABLE "attachment_links" (
  "organization_id" uuid NOT NULL REFERENCES "organizations"("id"),
  "attachment_id" uuid NOT NULL,
  "entity_type" text NOT NULL,
  "entity_id" uuid NOT NULL,
  "journal_entry_id" uuid,
  "document_id" uuid,
  "contact_id" uuid,
  "bank_transaction_id" uuid,
  "reconciliation_id" uuid,
  "created_by_kind" text NOT NULL,
  "created_by_id" text NOT NULL,
  "created_at" timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT "attachment_links_pkey" PRIMARY KEY ("organization_id", "attachment_id", "entity_type", "entity_id"),
  CONSTRAINT "attachment_links_attachment_fk" FOREIGN KEY ("organization_id", "attachment_id")
    REFERENCES "attachments"("organization_id", "id"),
  CONSTRAINT "attachment_links_entry_fk" FOREIGN KEY ("organization_id", "journal_entry_id")
    REFERENCES "journal_entries"("organization_id", "id"),
  CONSTRAINT "attachment_links_document_fk" FOREIGN KEY ("organization_id", "document_id")
    REFERENCES "documents"("organization_id", "id"),
  CONSTRAINT "attachment_links_contact_fk" FOREIGN KEY ("organization_id", "contact_id")
    REFERENCES "contacts"("organization_id", "id"),
  CONSTRAINT "attachment_links_bank_transaction_fk" FOREIGN KEY ("organization_id", "bank_transaction_id")
    REFERENCES "bank_transactions"("organization_id", "id"),
  CONSTRAINT "attachment_links_reconciliation_fk" FOREIGN KEY ("organization_id", "reconciliation_id")
    REFERENCES "reconciliations"("organization_id", "id"),
  CONSTRAINT "attachment_links_entity_type" CHECK ("entity_type" in
    ('journal_entry', 'document', 'payment', 'contact', 'bank_transaction', 'reconciliation')),
  -- The one column of its kind holds the entity id, the others are null.
  CONSTRAINT "attachment_links_one_target" CHECK (
    num_nonnulls("journal_entry_id", "document_id", "contact_id", "bank_transaction_id", "reconciliation_id") = 1
    AND "entity_id" = coalesce("journal_entry_id", "document_id", "contact_id", "bank_transaction_id", "reconciliation_id")
    AND ("journal_entry_id" is null) = ("entity_type" <> 'journal_entry')
    AND ("document_id" is null) = ("entity_type" not in ('document', 'payment'))
    AND ("contact_id" is null) = ("entity_type" <> 'contact')
    AND ("bank_transaction_id" is null) = ("entity_type" <> 'bank_transaction')
    AND ("reconciliation_id" is null) = ("entity_type" <> 'reconciliation'))
);
--> statement-breakpoint
CREATE INDEX "attachment_links_entity_idx" ON "attachment_links" ("organization_id", "entity_type", "entity_id");
