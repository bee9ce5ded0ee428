-- Ledger invariants the database enforces itself.
--
-- The ledger is written by more than one path: the posting routes, drafts posted later, operators with
-- psql, and the workers, importers and platform adapters still to come. Each rule below holds whichever
-- path writes, and whatever bug one of them has, because reports sum what is stored and cannot tell a
-- bad row from a good one. The domain code (packages/ledger) checks the same rules first so callers get
-- precise errors; these are the backstop.
--
-- Every rule raises SQLSTATE P0001 with the message '<ERROR_CODE>: <explanation>', where ERROR_CODE is
-- one of packages/core/src/errors.ts. packages/ledger/src/db-errors.ts turns such errors into DomainErrors.
-- Each statement is its own chunk because PGlite runs one statement per query.

-- Why in the database: the exception for lines written with their entry (rule 2) must know whether an
-- entry row was written by the current transaction, and only the database knows that. A row whose
-- writer is still in progress is visible only to that writer, so for a row we can see, "written by an
-- in-progress transaction" means "written by this transaction or one of its savepoints". The row's
-- xmin is a 32-bit id; its epoch is taken from our own top-level id, and ids that cannot be ours (older
-- than our top-level id, or 2^31 or more ahead of it, which only an id from a previous epoch can be)
-- answer false without asking pg_xact_status, which would refuse an id from the future.
CREATE FUNCTION ledger_written_by_current_transaction(row_xmin xid) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  top bigint := pg_current_xact_id()::text::bigint;
  candidate bigint := (top >> 32 << 32) | row_xmin::text::bigint;
BEGIN
  IF candidate = top THEN
    RETURN true;
  END IF;
  IF candidate < top OR candidate - top >= 2147483648 THEN
    RETURN false;
  END IF;
  RETURN pg_xact_status(candidate::text::xid8) = 'in progress';
END
$$;
--> statement-breakpoint

-- Rule 1. A posted (or void) entry has at least two lines and its lines sum to zero.
-- Why in the database: an unbalanced posted entry makes every later trial balance and balance sheet
-- wrong. The check is a constraint trigger deferred to commit, so it sees the entry as a whole however
-- many statements wrote its rows and in whichever order (entry then lines, or draft lines then the
-- status change). It fires for changes to lines and for entries becoming posted. Zero-amount lines are
-- refused earlier and for every entry by the check constraint journal_lines_amount_nonzero.
CREATE FUNCTION ledger_check_entry_balanced() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_entry_id uuid;
  v_status entry_status;
  v_lines int;
  v_sum bigint;
BEGIN
  IF TG_TABLE_NAME = 'journal_lines' THEN
    v_entry_id := CASE WHEN TG_OP = 'DELETE' THEN OLD.entry_id ELSE NEW.entry_id END;
  ELSE
    v_entry_id := NEW.id;
  END IF;
  SELECT status INTO v_status FROM journal_entries WHERE id = v_entry_id;
  -- Drafts may be unbalanced while they are being written; a deleted draft has nothing left to check.
  IF v_status IS NULL OR v_status = 'draft' THEN
    RETURN NULL;
  END IF;
  SELECT count(*), coalesce(sum(amount_cents), 0) INTO v_lines, v_sum
  FROM journal_lines WHERE entry_id = v_entry_id;
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
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER journal_lines_balanced
AFTER INSERT OR UPDATE OR DELETE ON journal_lines
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION ledger_check_entry_balanced();
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER journal_entries_balanced
AFTER INSERT OR UPDATE OF status ON journal_entries
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION ledger_check_entry_balanced();
--> statement-breakpoint

-- Rule 2. Lines of a posted or void entry cannot be inserted, updated or deleted. The one exception:
-- the transaction that posts an entry (inserting it as posted, or moving it from draft to posted) may
-- insert its lines, since nothing is committed history until that transaction commits, and rule 1
-- checks the result at commit.
-- Why in the database: posted history must never be edited, only voided and corrected, or reports for
-- closed periods and everything reconciled against them silently change. The entry row is read FOR SHARE
-- so that a line added to a draft and a concurrent posting of that draft cannot both commit unseen by
-- the balance check: one waits for the other.
CREATE FUNCTION ledger_guard_line_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_status entry_status;
  v_xmin xid;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    SELECT status INTO v_status FROM journal_entries WHERE id = OLD.entry_id FOR SHARE;
    IF v_status IN ('posted', 'void') THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = format('INVALID_STATE: lines of %s entry %s cannot be changed or deleted; void the entry and post a correction', v_status, OLD.entry_id);
    END IF;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    SELECT status, xmin INTO v_status, v_xmin FROM journal_entries WHERE id = NEW.entry_id FOR SHARE;
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
$$;
--> statement-breakpoint
CREATE TRIGGER journal_lines_frozen_when_posted
BEFORE INSERT OR UPDATE OR DELETE ON journal_lines
FOR EACH ROW EXECUTE FUNCTION ledger_guard_line_change();
--> statement-breakpoint

-- Rule 3. An entry starts as draft or posted and moves only draft -> posted -> void. A posted entry is
-- never edited: voiding may set status, voided_at and void_reason and nothing else (so its date and
-- organization cannot change). Void entries never change. Only drafts can be deleted.
-- Why in the database: voiding leaves the original visible and its reversal traceable; an update or
-- delete that skipped the state machine would rewrite history that reports, exports and reconciliations
-- have already shown.
CREATE FUNCTION ledger_guard_entry_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  expected journal_entries;
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.status = 'void' THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = 'INVALID_STATE: an entry is created as a draft or posted, never as void';
    END IF;
    RETURN NEW;
  END IF;
  IF TG_OP = 'DELETE' THEN
    IF OLD.status <> 'draft' THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = format('INVALID_STATE: %s entry %s cannot be deleted; only drafts can', OLD.status, OLD.id);
    END IF;
    RETURN OLD;
  END IF;
  IF OLD.status = 'draft' THEN
    IF NEW.status = 'void' THEN
      RAISE EXCEPTION USING ERRCODE = 'P0001',
        MESSAGE = format('INVALID_STATE: draft entry %s cannot be voided; post it or delete it', OLD.id);
    END IF;
    RETURN NEW;
  END IF;
  IF OLD.status = 'void' THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('INVALID_STATE: void entry %s cannot change', OLD.id);
  END IF;
  -- OLD.status = 'posted'
  IF NEW.status = 'draft' THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('INVALID_STATE: posted entry %s cannot go back to draft; void it instead', OLD.id);
  END IF;
  IF NEW.status = 'posted' THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('INVALID_STATE: posted entry %s cannot be edited; void it and post a correction', OLD.id);
  END IF;
  expected := OLD;
  expected.status := NEW.status;
  expected.voided_at := NEW.voided_at;
  expected.void_reason := NEW.void_reason;
  IF expected IS DISTINCT FROM NEW THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('INVALID_STATE: voiding entry %s may change only its status, voided_at and void_reason', OLD.id);
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER journal_entries_lifecycle
BEFORE INSERT OR UPDATE OR DELETE ON journal_entries
FOR EACH ROW EXECUTE FUNCTION ledger_guard_entry_change();
--> statement-breakpoint

-- Rule 4. An entry cannot be posted or voided with an entry_date on or before its organization's
-- books_closed_through.
-- Why in the database: closing the books promises that reported figures up to that date stay as they
-- were. Reading the organization row FOR SHARE makes a posting and a concurrent close (an UPDATE of that
-- row) take turns, so no posting into the newly closed period can commit beside the close.
CREATE FUNCTION ledger_guard_closed_period() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_closed_through date;
BEGIN
  IF NEW.status = 'draft' OR (TG_OP = 'UPDATE' AND NEW.status = OLD.status) THEN
    RETURN NEW;
  END IF;
  SELECT books_closed_through INTO v_closed_through
  FROM organizations WHERE id = NEW.organization_id FOR SHARE;
  IF v_closed_through IS NOT NULL AND NEW.entry_date <= v_closed_through THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001',
      MESSAGE = format('PERIOD_CLOSED: the books are closed through %s; an entry dated %s cannot be %s',
        v_closed_through, NEW.entry_date, CASE NEW.status WHEN 'void' THEN 'voided' ELSE 'posted' END);
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER journal_entries_period_open
BEFORE INSERT OR UPDATE OF status ON journal_entries
FOR EACH ROW EXECUTE FUNCTION ledger_guard_closed_period();
