-- The checks the database runs on every write look rows up by their tenant and id: since 0033 the tables' keys lead
-- with organization_id, and a lookup by id alone would read the whole table (each posted line's balance check scanned
-- every entry and line of every company). Each function is as before but for organization_id in its lookups.
CREATE OR REPLACE FUNCTION public.ledger_check_entry_balanced()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_entry_id uuid;
  v_organization_id uuid;
  v_status entry_status;
  v_lines int;
  v_sum bigint;
BEGIN
  IF TG_TABLE_NAME = 'journal_lines' THEN
    v_entry_id := CASE WHEN TG_OP = 'DELETE' THEN OLD.entry_id ELSE NEW.entry_id END;
    v_organization_id := CASE WHEN TG_OP = 'DELETE' THEN OLD.organization_id ELSE NEW.organization_id END;
  ELSE
    v_entry_id := NEW.id;
    v_organization_id := NEW.organization_id;
  END IF;
  SELECT status INTO v_status FROM journal_entries WHERE organization_id = v_organization_id AND id = v_entry_id;
  -- Drafts may be unbalanced while they are being written; a deleted draft has nothing left to check.
  IF v_status IS NULL OR v_status = 'draft' THEN
    RETURN NULL;
  END IF;
  SELECT count(*), coalesce(sum(amount_cents), 0) INTO v_lines, v_sum
  FROM journal_lines WHERE organization_id = v_organization_id AND entry_id = v_entry_id;
  IF v_lines < 2 THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('VALIDATION_ERROR: %s entry %s has %s line(s); an entry needs at least two', v_status, v_entry_id, v_lines);
  END IF;
  IF v_sum <> 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('UNBALANCED_ENTRY: %s entry %s does not balance: its lines sum to %s cents', v_status, v_entry_id, v_sum);
  END IF;
  RETURN NULL;
END
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.ledger_guard_line_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_status entry_status;
  v_xmin xid;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    SELECT status INTO v_status FROM journal_entries WHERE organization_id = OLD.organization_id AND id = OLD.entry_id FOR SHARE;
    IF v_status IN ('posted', 'void') THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = format('INVALID_STATE: lines of %s entry %s cannot be changed or deleted; void the entry and post a correction', v_status, OLD.entry_id);
    END IF;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    SELECT status, xmin INTO v_status, v_xmin FROM journal_entries WHERE organization_id = NEW.organization_id AND id = NEW.entry_id FOR SHARE;
    IF v_status = 'void'
       OR (v_status = 'posted' AND NOT (TG_OP = 'INSERT' AND ledger_written_by_current_transaction(v_xmin))) THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = format('INVALID_STATE: lines cannot be added to %s entry %s; void the entry and post a correction', v_status, NEW.entry_id);
    END IF;
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.documents_check_allocation()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  p documents;
  t documents;
BEGIN
  SELECT * INTO p FROM documents WHERE organization_id = NEW.organization_id AND id = NEW.payment_id;
  SELECT * INTO t FROM documents WHERE organization_id = NEW.organization_id AND id = NEW.target_id FOR SHARE;
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
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.banking_guard_reconciled_transaction()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
      SELECT status INTO v_status FROM reconciliations WHERE organization_id = OLD.organization_id AND id = OLD.reconciliation_id;
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
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.banking_guard_reconciled_lines()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_txn uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.bank_transaction_id ELSE NEW.bank_transaction_id END;
  v_organization_id uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.organization_id ELSE NEW.organization_id END;
BEGIN
  IF EXISTS (SELECT 1 FROM bank_transactions WHERE organization_id = v_organization_id AND id = v_txn AND reconciliation_id IS NOT NULL) THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('ALREADY_RECONCILED: bank transaction %s is reconciled; its classification cannot change', v_txn);
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END
$function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.banking_check_reconciliation()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_cleared bigint;
BEGIN
  IF NEW.status = 'finished' AND OLD.status IS DISTINCT FROM 'finished' THEN
    SELECT NEW.opening_balance_cents + coalesce(sum(amount_cents), 0) INTO v_cleared
    FROM bank_transactions WHERE organization_id = NEW.organization_id AND reconciliation_id = NEW.id;
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
$function$;
