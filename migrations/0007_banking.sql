-- Banking: bank accounts linked to ledger accounts, feed connections, bank transactions and their
-- classification, reconciliation sessions.
--
-- Why some rules live in the database: bank transactions are written by feed syncs running in workers, by
-- the bank actions of partner apps and bookkeepers, and by reconciliation. A reconciliation is a promise that
-- the books agreed with a bank statement; if any of those paths could change a reconciled row, or finish a
-- session that does not balance, that promise would silently break. So, whichever path writes:
--   * a reconciled transaction keeps its amount, date, account, status and entry until its session is undone
--     (bank_transactions_reconciled_frozen);
--   * a transaction is reconciled only into an open session of its own bank account, and only once it is in
--     the books (categorized or matched);
--   * a session is finished only when its opening balance plus the transactions reconciled into it equals
--     the statement's ending balance (reconciliations_finish_balanced);
--   * one open session per bank account, and every reference is a composite foreign key on
--     (organization_id, id), so no row can point into another tenant's books.
-- Rules raise P0001 with '<ERROR_CODE>: <message>' like the ledger's (packages/ledger/src/db-errors.ts).
-- Each statement is its own chunk because PGlite runs one statement per query.
CREATE TYPE "public"."bank_transaction_status" AS ENUM('unreviewed', 'categorized', 'matched', 'excluded');--> statement-breakpoint
CREATE TYPE "public"."bank_transaction_source" AS ENUM('aggregator_bank_feed', 'posting', 'manual');--> statement-breakpoint
CREATE TYPE "public"."reconciliation_status" AS ENUM('open', 'finished', 'undone');--> statement-breakpoint
-- Entries posted by a bank action (categorize, split, a match's difference, a reconciliation adjustment). The
-- value is only added here, never used in this migration, so adding it inside the migration transaction is safe.
ALTER TYPE "public"."entry_source" ADD VALUE IF NOT EXISTS 'bank_transaction';--> statement-breakpoint
CREATE TABLE "bank_feed_connections" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"institution_name" text NOT NULL,
	"item_id" text NOT NULL,
	"access_token" text NOT NULL,
	"access_token_key_id" text NOT NULL,
	"cursor" text,
	"status" text DEFAULT 'active' NOT NULL,
	"last_synced_at" timestamp with time zone,
	"last_error" text,
	"last_error_at" timestamp with time zone,
	"sync_requested_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "bank_feed_connections_org_id_key" UNIQUE("organization_id","id"),
	CONSTRAINT "bank_feed_connections_item_key" UNIQUE("provider","item_id"),
	CONSTRAINT "bank_feed_connections_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id"),
	CONSTRAINT "bank_feed_connections_status" CHECK ("status" in ('active', 'error', 'disconnected'))
);
--> statement-breakpoint
CREATE INDEX "bank_feed_connections_sync_requested_idx" ON "bank_feed_connections" USING btree ("sync_requested_at") WHERE "sync_requested_at" is not null;--> statement-breakpoint
CREATE TABLE "bank_accounts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"account_id" uuid NOT NULL,
	"name" text NOT NULL,
	"institution" text,
	"mask" text,
	"currency" text DEFAULT 'USD' NOT NULL,
	"feed_connection_id" uuid,
	"feed_account_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "bank_accounts_org_id_key" UNIQUE("organization_id","id"),
	-- One register per ledger account: two would split one account's bank activity in two.
	CONSTRAINT "bank_accounts_org_account_key" UNIQUE("organization_id","account_id"),
	CONSTRAINT "bank_accounts_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id"),
	CONSTRAINT "bank_accounts_account_fk" FOREIGN KEY ("organization_id","account_id") REFERENCES "public"."accounts"("organization_id","id"),
	CONSTRAINT "bank_accounts_feed_connection_fk" FOREIGN KEY ("organization_id","feed_connection_id") REFERENCES "public"."bank_feed_connections"("organization_id","id"),
	CONSTRAINT "bank_accounts_mask" CHECK ("mask" is null or "mask" ~ '^[0-9A-Za-z]{2,8}$'),
	CONSTRAINT "bank_accounts_currency" CHECK ("currency" ~ '^[A-Z]{3}$'),
	CONSTRAINT "bank_accounts_feed_link" CHECK (("feed_connection_id" is null) = ("feed_account_id" is null))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "bank_accounts_feed_account_key" ON "bank_accounts" USING btree ("feed_connection_id", "feed_account_id") WHERE "feed_connection_id" is not null;--> statement-breakpoint
-- Why in the database: the ledger account of a register must be a bank or credit-card account, whatever
-- later changes its subtype; accounts with a register keep their subtype (checked on both tables).
CREATE FUNCTION banking_check_register_account() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_subtype account_subtype;
BEGIN
  IF TG_TABLE_NAME = 'bank_accounts' THEN
    SELECT subtype INTO v_subtype FROM accounts WHERE organization_id = NEW.organization_id AND id = NEW.account_id;
    IF v_subtype IS NULL OR v_subtype NOT IN ('bank', 'credit_card') THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = 'INVALID_ACCOUNT: a bank account is linked to a ledger account of subtype bank or credit_card';
    END IF;
  ELSIF NEW.subtype IS DISTINCT FROM OLD.subtype AND NEW.subtype NOT IN ('bank', 'credit_card')
    AND EXISTS (SELECT 1 FROM bank_accounts WHERE organization_id = NEW.organization_id AND account_id = NEW.id) THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = 'ACCOUNT_TYPE_LOCKED: the account holds a bank register; it stays a bank or credit_card account';
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER bank_accounts_register_account
BEFORE INSERT OR UPDATE OF account_id ON bank_accounts
FOR EACH ROW EXECUTE FUNCTION banking_check_register_account();
--> statement-breakpoint
CREATE TRIGGER accounts_register_subtype
BEFORE UPDATE OF subtype ON accounts
FOR EACH ROW EXECUTE FUNCTION banking_check_register_account();
--> statement-breakpoint
CREATE TABLE "reconciliations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"bank_account_id" uuid NOT NULL,
	"status" "reconciliation_status" DEFAULT 'open' NOT NULL,
	"statement_end_date" date NOT NULL,
	"statement_ending_balance_cents" bigint NOT NULL,
	"opening_balance_cents" bigint NOT NULL,
	"adjustment_entry_id" uuid,
	"finished_at" timestamp with time zone,
	"undone_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "reconciliations_org_id_key" UNIQUE("organization_id","id"),
	CONSTRAINT "reconciliations_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id"),
	CONSTRAINT "reconciliations_bank_account_fk" FOREIGN KEY ("organization_id","bank_account_id") REFERENCES "public"."bank_accounts"("organization_id","id"),
	CONSTRAINT "reconciliations_adjustment_entry_fk" FOREIGN KEY ("organization_id","adjustment_entry_id") REFERENCES "public"."journal_entries"("organization_id","id"),
	CONSTRAINT "reconciliations_finished" CHECK (("status" = 'open') = ("finished_at" is null))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "reconciliations_one_open_key" ON "reconciliations" USING btree ("bank_account_id") WHERE "status" = 'open';--> statement-breakpoint
CREATE INDEX "reconciliations_org_account_idx" ON "reconciliations" USING btree ("organization_id", "bank_account_id", "statement_end_date");--> statement-breakpoint
CREATE TABLE "bank_transactions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"bank_account_id" uuid NOT NULL,
	"txn_date" date NOT NULL,
	"amount_cents" bigint NOT NULL,
	"description" text NOT NULL,
	"counterparty" text,
	"source_type" "bank_transaction_source" NOT NULL,
	"status" "bank_transaction_status" DEFAULT 'unreviewed' NOT NULL,
	"pending" boolean DEFAULT false NOT NULL,
	"external_id" text,
	"review_reason" text,
	"journal_entry_id" uuid,
	"contact_id" uuid,
	"tax_rate_id" uuid,
	"reconciliation_id" uuid,
	"reconciled_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "bank_transactions_org_id_key" UNIQUE("organization_id","id"),
	CONSTRAINT "bank_transactions_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id"),
	CONSTRAINT "bank_transactions_bank_account_fk" FOREIGN KEY ("organization_id","bank_account_id") REFERENCES "public"."bank_accounts"("organization_id","id"),
	CONSTRAINT "bank_transactions_journal_entry_fk" FOREIGN KEY ("organization_id","journal_entry_id") REFERENCES "public"."journal_entries"("organization_id","id"),
	CONSTRAINT "bank_transactions_contact_fk" FOREIGN KEY ("organization_id","contact_id") REFERENCES "public"."contacts"("organization_id","id"),
	CONSTRAINT "bank_transactions_tax_rate_fk" FOREIGN KEY ("organization_id","tax_rate_id") REFERENCES "public"."tax_rates"("organization_id","id"),
	CONSTRAINT "bank_transactions_reconciliation_fk" FOREIGN KEY ("organization_id","reconciliation_id") REFERENCES "public"."reconciliations"("organization_id","id"),
	CONSTRAINT "bank_transactions_amount_nonzero" CHECK ("amount_cents" <> 0),
	CONSTRAINT "bank_transactions_reconciled" CHECK (("reconciliation_id" is null) = ("reconciled_at" is null)),
	CONSTRAINT "bank_transactions_reconciled_in_books" CHECK ("reconciliation_id" is null or "status" in ('categorized', 'matched'))
);
--> statement-breakpoint
-- A feed row is stored once per account whatever page brings it again: syncs upsert on this key.
CREATE UNIQUE INDEX "bank_transactions_external_key" ON "bank_transactions" USING btree ("bank_account_id", "external_id") WHERE "external_id" is not null;--> statement-breakpoint
CREATE INDEX "bank_transactions_org_account_date_idx" ON "bank_transactions" USING btree ("organization_id", "bank_account_id", "txn_date", "id");--> statement-breakpoint
CREATE INDEX "bank_transactions_org_date_idx" ON "bank_transactions" USING btree ("organization_id", "txn_date", "id");--> statement-breakpoint
CREATE INDEX "bank_transactions_reconciliation_idx" ON "bank_transactions" USING btree ("reconciliation_id") WHERE "reconciliation_id" is not null;--> statement-breakpoint
-- How a bank transaction is classified: one line per account or document it went to. An account line is
-- posted in the transaction's own entry; a document line names the invoice, bill or payment it settled and,
-- when the action recorded a payment for it, that payment.
CREATE TABLE "bank_transaction_lines" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"bank_transaction_id" uuid NOT NULL,
	"line_no" integer NOT NULL,
	"account_id" uuid,
	"document_id" uuid,
	"payment_id" uuid,
	"description" text,
	"amount_cents" bigint NOT NULL,
	CONSTRAINT "bank_transaction_lines_line_key" UNIQUE("bank_transaction_id","line_no"),
	CONSTRAINT "bank_transaction_lines_transaction_fk" FOREIGN KEY ("organization_id","bank_transaction_id") REFERENCES "public"."bank_transactions"("organization_id","id") ON DELETE CASCADE,
	CONSTRAINT "bank_transaction_lines_account_fk" FOREIGN KEY ("organization_id","account_id") REFERENCES "public"."accounts"("organization_id","id"),
	CONSTRAINT "bank_transaction_lines_document_fk" FOREIGN KEY ("organization_id","document_id") REFERENCES "public"."documents"("organization_id","id"),
	CONSTRAINT "bank_transaction_lines_payment_fk" FOREIGN KEY ("organization_id","payment_id") REFERENCES "public"."documents"("organization_id","id"),
	CONSTRAINT "bank_transaction_lines_target" CHECK (("account_id" is null) <> ("document_id" is null)),
	CONSTRAINT "bank_transaction_lines_amount_nonzero" CHECK ("amount_cents" <> 0)
);
--> statement-breakpoint
CREATE INDEX "bank_transaction_lines_document_idx" ON "bank_transaction_lines" USING btree ("organization_id", "document_id") WHERE "document_id" is not null;--> statement-breakpoint
-- Why in the database: see the top of this file. A reconciled row changes only by leaving its session, and
-- only while that session is open or being undone; it enters only an open session of its own account.
CREATE FUNCTION banking_guard_reconciled_transaction() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_status reconciliation_status;
  v_account uuid;
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF OLD.reconciliation_id IS NOT NULL THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = format('ALREADY_RECONCILED: bank transaction %s is reconciled and cannot be deleted', OLD.id);
    END IF;
    RETURN OLD;
  END IF;
  IF NEW.reconciliation_id IS NOT NULL AND NEW.reconciliation_id IS DISTINCT FROM OLD.reconciliation_id THEN
    SELECT status, bank_account_id INTO v_status, v_account FROM reconciliations
    WHERE organization_id = NEW.organization_id AND id = NEW.reconciliation_id FOR SHARE;
    IF v_status IS DISTINCT FROM 'open' OR v_account IS DISTINCT FROM NEW.bank_account_id THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = format('NO_OPEN_RECONCILIATION: bank transaction %s can only be reconciled into an open session of its own bank account', NEW.id);
    END IF;
  END IF;
  IF OLD.reconciliation_id IS NOT NULL THEN
    IF NEW.reconciliation_id IS NULL THEN
      SELECT status INTO v_status FROM reconciliations WHERE id = OLD.reconciliation_id;
      IF v_status = 'finished' THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001',
          MESSAGE = format('ALREADY_RECONCILED: bank transaction %s belongs to a finished reconciliation; undo it first', OLD.id);
      END IF;
    ELSIF (NEW.amount_cents, NEW.txn_date, NEW.status, NEW.journal_entry_id, NEW.bank_account_id, NEW.reconciliation_id)
      IS DISTINCT FROM (OLD.amount_cents, OLD.txn_date, OLD.status, OLD.journal_entry_id, OLD.bank_account_id, OLD.reconciliation_id) THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = format('ALREADY_RECONCILED: bank transaction %s is reconciled; its amount, date, status and entry cannot change', OLD.id);
    END IF;
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER bank_transactions_reconciled_frozen
BEFORE UPDATE OR DELETE ON bank_transactions
FOR EACH ROW EXECUTE FUNCTION banking_guard_reconciled_transaction();
--> statement-breakpoint
-- The lines of a reconciled transaction are its classification: they change only with the transaction.
CREATE FUNCTION banking_guard_reconciled_lines() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_txn uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.bank_transaction_id ELSE NEW.bank_transaction_id END;
BEGIN
  IF EXISTS (SELECT 1 FROM bank_transactions WHERE id = v_txn AND reconciliation_id IS NOT NULL) THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('ALREADY_RECONCILED: bank transaction %s is reconciled; its classification cannot change', v_txn);
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER bank_transaction_lines_reconciled_frozen
BEFORE INSERT OR UPDATE OR DELETE ON bank_transaction_lines
FOR EACH ROW EXECUTE FUNCTION banking_guard_reconciled_lines();
--> statement-breakpoint
-- Why in the database: a finished session says the books agreed with the statement. Its opening balance
-- plus what was reconciled into it must equal the statement's ending balance, whoever finishes it.
CREATE FUNCTION banking_check_reconciliation() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_cleared bigint;
BEGIN
  IF NEW.status = 'finished' AND OLD.status IS DISTINCT FROM 'finished' THEN
    SELECT NEW.opening_balance_cents + coalesce(sum(amount_cents), 0) INTO v_cleared
    FROM bank_transactions WHERE reconciliation_id = NEW.id;
    IF v_cleared <> NEW.statement_ending_balance_cents THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = format('RECONCILIATION_UNBALANCED: the cleared balance %s differs from the statement ending balance %s by %s cents',
          v_cleared, NEW.statement_ending_balance_cents, NEW.statement_ending_balance_cents - v_cleared);
    END IF;
  END IF;
  IF OLD.status = 'undone' OR (OLD.status = 'finished' AND NEW.status = 'open') THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('INVALID_STATE: reconciliation %s is %s and cannot become %s', OLD.id, OLD.status, NEW.status);
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER reconciliations_finish_balanced
BEFORE UPDATE ON reconciliations
FOR EACH ROW EXECUTE FUNCTION banking_check_reconciliation();
