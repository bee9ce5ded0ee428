-- Sales and purchase documents: contacts, items, tax rates, documents, their lines and allocations.
--
-- Why some rules live in the database: open balances are written by concurrent payments, by voids that
-- reopen what a payment paid, and later by the bank actions (match, split) and the agent gateway. Aging
-- reports and the AR and AP control accounts must agree whichever of those paths wrote, so the rules that
-- keep open balances right are enforced here as well as in packages/documents (which checks them first
-- to give precise errors):
--   * a document's open balance stays within [0, total] (documents_open_within_total), so two payments
--     racing for one bill cannot both commit an over-allocation even if a code path forgot its row lock;
--   * an allocation joins a payment to a document of the same contact and a matching type, never to a
--     void document or one dated after the payment, and a payment names each document once (trigger and
--     unique key below);
--   * every reference (contact, item, tax rate, account, journal entry, allocation) is a composite foreign
--     key on (organization_id, id), so no row can point into another tenant's books;
--   * a posting document always names the journal entry it posted (documents_entry), and a document's
--     status always follows its open balance (documents_status_follows_balance), so lists filtered by
--     status agree with the balances aging reads.
-- Each statement is its own chunk because PGlite runs one statement per query.
CREATE TYPE "public"."contact_kind" AS ENUM('customer', 'vendor', 'both');--> statement-breakpoint
CREATE TYPE "public"."item_kind" AS ENUM('service', 'product');--> statement-breakpoint
CREATE TYPE "public"."document_type" AS ENUM('invoice', 'customer_payment', 'sales_receipt', 'credit_memo', 'refund_receipt', 'estimate', 'bill', 'vendor_credit', 'bill_payment');--> statement-breakpoint
CREATE TYPE "public"."document_status" AS ENUM('open', 'partially_paid', 'paid', 'partially_applied', 'applied', 'converted', 'void');--> statement-breakpoint
-- New journal-entry sources: each posting document is the source of its entry. The values are only added
-- here, never used in this migration, so adding them inside the migration transaction is safe.
ALTER TYPE "public"."entry_source" ADD VALUE IF NOT EXISTS 'invoice';--> statement-breakpoint
ALTER TYPE "public"."entry_source" ADD VALUE IF NOT EXISTS 'customer_payment';--> statement-breakpoint
ALTER TYPE "public"."entry_source" ADD VALUE IF NOT EXISTS 'sales_receipt';--> statement-breakpoint
ALTER TYPE "public"."entry_source" ADD VALUE IF NOT EXISTS 'credit_memo';--> statement-breakpoint
ALTER TYPE "public"."entry_source" ADD VALUE IF NOT EXISTS 'refund_receipt';--> statement-breakpoint
ALTER TYPE "public"."entry_source" ADD VALUE IF NOT EXISTS 'bill';--> statement-breakpoint
ALTER TYPE "public"."entry_source" ADD VALUE IF NOT EXISTS 'vendor_credit';--> statement-breakpoint
CREATE TABLE "contacts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"kind" "contact_kind" NOT NULL,
	"name" text NOT NULL,
	"email" text,
	"phone" text,
	"billing_address" jsonb,
	"shipping_address" jsonb,
	"tax_id" text,
	"archived" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "contacts_org_id_key" UNIQUE("organization_id","id"),
	CONSTRAINT "contacts_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id")
);
--> statement-breakpoint
-- Why in the database: names are how users pick a contact, item or tax rate; two that differ only in case
-- would be indistinguishable, and two concurrent creates could both pass a check made in code.
CREATE UNIQUE INDEX "contacts_org_name_key" ON "contacts" USING btree ("organization_id", lower("name"));--> statement-breakpoint
CREATE TABLE "items" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"kind" "item_kind" DEFAULT 'service' NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"unit_price_cents" bigint DEFAULT 0 NOT NULL,
	"income_account_id" uuid,
	"expense_account_id" uuid,
	"archived" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "items_org_id_key" UNIQUE("organization_id","id"),
	CONSTRAINT "items_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id"),
	CONSTRAINT "items_income_account_fk" FOREIGN KEY ("organization_id","income_account_id") REFERENCES "public"."accounts"("organization_id","id"),
	CONSTRAINT "items_expense_account_fk" FOREIGN KEY ("organization_id","expense_account_id") REFERENCES "public"."accounts"("organization_id","id"),
	CONSTRAINT "items_unit_price" CHECK ("unit_price_cents" >= 0),
	CONSTRAINT "items_has_account" CHECK ("income_account_id" is not null or "expense_account_id" is not null)
);
--> statement-breakpoint
CREATE UNIQUE INDEX "items_org_name_key" ON "items" USING btree ("organization_id", lower("name"));--> statement-breakpoint
CREATE TABLE "tax_rates" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"name" text NOT NULL,
	"rate_bps" integer NOT NULL,
	"liability_account_id" uuid NOT NULL,
	"archived" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tax_rates_org_id_key" UNIQUE("organization_id","id"),
	CONSTRAINT "tax_rates_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id"),
	CONSTRAINT "tax_rates_liability_account_fk" FOREIGN KEY ("organization_id","liability_account_id") REFERENCES "public"."accounts"("organization_id","id"),
	CONSTRAINT "tax_rates_rate" CHECK ("rate_bps" between 0 and 10000)
);
--> statement-breakpoint
CREATE UNIQUE INDEX "tax_rates_org_name_key" ON "tax_rates" USING btree ("organization_id", lower("name"));--> statement-breakpoint
CREATE TABLE "documents" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"type" "document_type" NOT NULL,
	"status" "document_status" NOT NULL,
	"number" text,
	"contact_id" uuid NOT NULL,
	"date" date NOT NULL,
	"due_date" date,
	"memo" text,
	"reference" text,
	"subtotal_cents" bigint NOT NULL,
	"tax_cents" bigint DEFAULT 0 NOT NULL,
	"total_cents" bigint NOT NULL,
	"open_cents" bigint NOT NULL,
	"control_account_id" uuid,
	"bank_account_id" uuid,
	"journal_entry_id" uuid,
	"estimate_id" uuid,
	"invoice_id" uuid,
	"void_reason" text,
	"voided_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "documents_org_id_key" UNIQUE("organization_id","id"),
	CONSTRAINT "documents_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id"),
	CONSTRAINT "documents_contact_fk" FOREIGN KEY ("organization_id","contact_id") REFERENCES "public"."contacts"("organization_id","id"),
	CONSTRAINT "documents_control_account_fk" FOREIGN KEY ("organization_id","control_account_id") REFERENCES "public"."accounts"("organization_id","id"),
	CONSTRAINT "documents_bank_account_fk" FOREIGN KEY ("organization_id","bank_account_id") REFERENCES "public"."accounts"("organization_id","id"),
	CONSTRAINT "documents_journal_entry_fk" FOREIGN KEY ("organization_id","journal_entry_id") REFERENCES "public"."journal_entries"("organization_id","id"),
	CONSTRAINT "documents_open_within_total" CHECK ("open_cents" >= 0 and "open_cents" <= "total_cents"),
	CONSTRAINT "documents_total" CHECK ("subtotal_cents" >= 0 and "tax_cents" >= 0 and "total_cents" = "subtotal_cents" + "tax_cents"),
	CONSTRAINT "documents_voided" CHECK (("status" = 'void') = ("voided_at" is not null)),
	CONSTRAINT "documents_entry" CHECK (("type" = 'estimate') = ("journal_entry_id" is null)),
	CONSTRAINT "documents_status_follows_balance" CHECK ("status" IN ('void', 'converted')
		OR ("type" IN ('invoice', 'bill') AND "status" = (CASE WHEN "open_cents" = "total_cents" THEN 'open' WHEN "open_cents" = 0 THEN 'paid' ELSE 'partially_paid' END)::document_status)
		OR ("type" IN ('credit_memo', 'vendor_credit', 'customer_payment', 'bill_payment') AND "status" = (CASE WHEN "open_cents" = "total_cents" THEN 'open' WHEN "open_cents" = 0 THEN 'applied' ELSE 'partially_applied' END)::document_status)
		OR ("type" IN ('sales_receipt', 'refund_receipt') AND "status" = 'paid')
		OR ("type" = 'estimate' AND "status" = 'open'))
);
--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_estimate_fk" FOREIGN KEY ("organization_id","estimate_id") REFERENCES "public"."documents"("organization_id","id");--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_invoice_fk" FOREIGN KEY ("organization_id","invoice_id") REFERENCES "public"."documents"("organization_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "documents_org_type_number_key" ON "documents" USING btree ("organization_id","type","number") WHERE "number" is not null;--> statement-breakpoint
CREATE INDEX "documents_org_type_date_idx" ON "documents" USING btree ("organization_id","type","date","id");--> statement-breakpoint
CREATE INDEX "documents_org_contact_idx" ON "documents" USING btree ("organization_id","contact_id");--> statement-breakpoint
CREATE TABLE "document_lines" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"document_id" uuid NOT NULL,
	"line_no" integer NOT NULL,
	"item_id" uuid,
	"account_id" uuid NOT NULL,
	"description" text,
	"quantity" numeric(18, 4) NOT NULL,
	"unit_price_cents" bigint NOT NULL,
	"amount_cents" bigint NOT NULL,
	"tax_rate_id" uuid,
	"tax_cents" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "document_lines_document_line_key" UNIQUE("document_id","line_no"),
	CONSTRAINT "document_lines_document_fk" FOREIGN KEY ("organization_id","document_id") REFERENCES "public"."documents"("organization_id","id"),
	CONSTRAINT "document_lines_item_fk" FOREIGN KEY ("organization_id","item_id") REFERENCES "public"."items"("organization_id","id"),
	CONSTRAINT "document_lines_account_fk" FOREIGN KEY ("organization_id","account_id") REFERENCES "public"."accounts"("organization_id","id"),
	CONSTRAINT "document_lines_tax_rate_fk" FOREIGN KEY ("organization_id","tax_rate_id") REFERENCES "public"."tax_rates"("organization_id","id"),
	CONSTRAINT "document_lines_quantity" CHECK ("quantity" > 0),
	CONSTRAINT "document_lines_amounts" CHECK ("unit_price_cents" >= 0 and "amount_cents" >= 0 and "tax_cents" >= 0)
);
--> statement-breakpoint
CREATE TABLE "document_allocations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"payment_id" uuid NOT NULL,
	"target_id" uuid NOT NULL,
	"amount_cents" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"voided_at" timestamp with time zone,
	CONSTRAINT "document_allocations_payment_target_key" UNIQUE("payment_id","target_id"),
	CONSTRAINT "document_allocations_payment_fk" FOREIGN KEY ("organization_id","payment_id") REFERENCES "public"."documents"("organization_id","id"),
	CONSTRAINT "document_allocations_target_fk" FOREIGN KEY ("organization_id","target_id") REFERENCES "public"."documents"("organization_id","id"),
	CONSTRAINT "document_allocations_positive" CHECK ("amount_cents" > 0)
);
--> statement-breakpoint
CREATE INDEX "document_allocations_target_idx" ON "document_allocations" USING btree ("organization_id","target_id");--> statement-breakpoint
-- Why in the database: an allocation to the wrong kind of document, another contact's document or a void
-- one would move a balance between customers or revive a voided bill, and aging would silently stop
-- matching the control accounts. The target row is read FOR SHARE so that a concurrent void of the target
-- (an UPDATE of that row) and the allocation take turns. Raises P0001 '<ERROR_CODE>: ...' like the ledger
-- rules, so packages/ledger/src/db-errors.ts maps it to a DomainError.
CREATE FUNCTION documents_check_allocation() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  p documents;
  t documents;
BEGIN
  SELECT * INTO p FROM documents WHERE id = NEW.payment_id;
  SELECT * INTO t FROM documents WHERE id = NEW.target_id FOR SHARE;
  IF NOT ((p.type = 'customer_payment' AND t.type IN ('invoice', 'credit_memo'))
       OR (p.type = 'bill_payment' AND t.type IN ('bill', 'vendor_credit'))) THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('INVALID_ALLOCATION: a %s cannot be allocated to a %s', p.type, t.type);
  END IF;
  IF p.contact_id <> t.contact_id THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('INVALID_ALLOCATION: %s %s belongs to another contact than the payment', t.type, t.id);
  END IF;
  IF t.date > p.date THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('INVALID_ALLOCATION: %s %s is dated after the payment', t.type, t.id);
  END IF;
  IF NEW.voided_at IS NULL AND (t.status = 'void' OR p.status = 'void') THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('INVALID_ALLOCATION: %s %s is void', t.type, t.id);
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER document_allocations_valid
BEFORE INSERT ON document_allocations
FOR EACH ROW EXECUTE FUNCTION documents_check_allocation();
--> statement-breakpoint
-- Why in the database: a posting document's open balance stands for its journal entry, so voiding the entry
-- of a live document (say through POST /entries/:id/void) would take the amount out of the receivables or
-- payables account while the document stayed open, and aging would stop matching the control accounts. The
-- documents code voids a document (or points it at its new entry, on an edit) before voiding the old entry.
CREATE FUNCTION documents_guard_entry_void() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  d documents;
BEGIN
  SELECT * INTO d FROM documents
  WHERE organization_id = NEW.organization_id AND journal_entry_id = NEW.id AND status <> 'void'
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('INVALID_STATE: this entry was posted by %s %s; void or edit the %s instead',
        replace(d.type::text, '_', ' '), d.id, replace(d.type::text, '_', ' '));
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER journal_entries_document_void
BEFORE UPDATE OF status ON journal_entries
FOR EACH ROW WHEN (NEW.status = 'void' AND OLD.status IS DISTINCT FROM 'void')
EXECUTE FUNCTION documents_guard_entry_void();
