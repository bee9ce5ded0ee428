-- Client companies are created, changed, archived and unarchived through the API and the CLI.
--
-- `tax_id` is the company's tax identification number (an EIN, a VAT number...), kept as given. `archived_at` marks an
-- archived company: its books, reports and history stay readable, and nothing may be written to them until it is
-- unarchived.
ALTER TABLE "organizations" ADD COLUMN "tax_id" text;
--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "archived_at" timestamp with time zone;
--> statement-breakpoint
-- Rule 4 of 0003 grows a second half: nothing is posted or voided in an archived company.
-- Why in the database: the API refuses every write to an archived company where it resolves the company, but a
-- posting that resolved it a moment before the archive, a scheduled run or a script must not slip in after it. The
-- row is already read FOR SHARE here (for the closed-books date), so archiving (an UPDATE of that row) waits for the
-- postings in flight, and every posting after it sees the company archived, at no cost of its own.
CREATE OR REPLACE FUNCTION ledger_guard_closed_period() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_closed_through date;
  v_archived_at timestamptz;
BEGIN
  IF NEW.status = 'draft' OR (TG_OP = 'UPDATE' AND NEW.status = OLD.status) THEN
    RETURN NEW;
  END IF;
  SELECT books_closed_through, archived_at INTO v_closed_through, v_archived_at
  FROM organizations WHERE id = NEW.organization_id FOR SHARE;
  IF v_archived_at IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('COMPANY_ARCHIVED: the company is archived; an entry cannot be %s until it is unarchived',
        CASE NEW.status WHEN 'void' THEN 'voided' ELSE 'posted' END);
  END IF;
  IF v_closed_through IS NOT NULL AND NEW.entry_date <= v_closed_through THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('PERIOD_CLOSED: the books are closed through %s; an entry dated %s cannot be %s',
        v_closed_through, NEW.entry_date, CASE NEW.status WHEN 'void' THEN 'voided' ELSE 'posted' END);
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
-- Creating a company is a request of the firm, not of an organization: its Idempotency-Key lives in the key space
-- `firm`, one key per firm, its record kept under the company the request created. This index is the key's lookup
-- and makes a second record of one key impossible, whoever writes it.
CREATE UNIQUE INDEX "idempotency_keys_firm_key" ON "idempotency_keys" ("firm_id", "key") WHERE "route" = 'firm';
