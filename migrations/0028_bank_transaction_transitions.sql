-- A bank transaction's state moves only as the catalogue in packages/banking/src/transactions.ts
-- (BANK_TRANSACTION_TRANSITIONS) allows: excluded rows come back only as unreviewed, and staying in a state is
-- always allowed. Rows are inserted in any state (a posting route's register row is categorized or matched).
CREATE FUNCTION banking_check_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
    (OLD.status = 'unreviewed' AND NEW.status IN ('categorized', 'matched', 'excluded'))
    OR (OLD.status = 'categorized' AND NEW.status IN ('unreviewed', 'matched', 'excluded'))
    OR (OLD.status = 'matched' AND NEW.status IN ('unreviewed', 'categorized', 'excluded'))
    OR (OLD.status = 'excluded' AND NEW.status = 'unreviewed')
  ) THEN
    RAISE EXCEPTION 'bank transaction % cannot move from % to %', OLD.id, OLD.status, NEW.status
      USING ERRCODE = 'check_violation', CONSTRAINT = 'bank_transactions_transition';
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER bank_transactions_transition
BEFORE UPDATE OF status ON bank_transactions
FOR EACH ROW EXECUTE FUNCTION banking_check_transition();
