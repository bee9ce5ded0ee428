-- Per account and calendar month, the sum of that month's daily rollup rows, so that a report over any range reads
-- whole months from here and only the days of the partial months at its edges from account_daily_balances: a few
-- rows per account whatever the number of lines or days. `month` is the first day of the month.
CREATE TABLE "account_monthly_balances" (
	"organization_id" uuid NOT NULL,
	"account_id" uuid NOT NULL,
	"month" date NOT NULL,
	"amount_cents" bigint NOT NULL,
	CONSTRAINT "account_monthly_balances_pkey" PRIMARY KEY("organization_id","account_id","month"),
	CONSTRAINT "account_monthly_balances_account_fk" FOREIGN KEY ("organization_id","account_id")
		REFERENCES "public"."accounts"("organization_id","id"),
	CONSTRAINT "account_monthly_balances_first_day" CHECK (extract(day from "month") = 1)
);
--> statement-breakpoint
CREATE INDEX "account_monthly_balances_org_month_idx" ON "account_monthly_balances" USING btree ("organization_id","month");
--> statement-breakpoint

-- Why in the database: every path that writes the daily rollup (a posting, a void, a bulk load, an operator with
-- psql) keeps the monthly one with it in the same transaction, so the two can never disagree. The trigger fires
-- per daily row in the order the writer upserts them (account, then day), so concurrent postings lock monthly rows
-- in account order as they do daily rows, and cannot deadlock on them.
CREATE FUNCTION account_monthly_balances_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND (TG_OP = 'DELETE' OR NEW.organization_id IS DISTINCT FROM OLD.organization_id
      OR NEW.account_id IS DISTINCT FROM OLD.account_id
      OR date_trunc('month', NEW.day) IS DISTINCT FROM date_trunc('month', OLD.day)) THEN
    INSERT INTO account_monthly_balances (organization_id, account_id, month, amount_cents)
    VALUES (OLD.organization_id, OLD.account_id, date_trunc('month', OLD.day)::date, -OLD.amount_cents)
    ON CONFLICT (organization_id, account_id, month)
    DO UPDATE SET amount_cents = account_monthly_balances.amount_cents + excluded.amount_cents;
    IF TG_OP = 'DELETE' THEN
      RETURN NULL;
    END IF;
    INSERT INTO account_monthly_balances (organization_id, account_id, month, amount_cents)
    VALUES (NEW.organization_id, NEW.account_id, date_trunc('month', NEW.day)::date, NEW.amount_cents)
    ON CONFLICT (organization_id, account_id, month)
    DO UPDATE SET amount_cents = account_monthly_balances.amount_cents + excluded.amount_cents;
    RETURN NULL;
  END IF;
  -- An insert adds the row; an update within one month adds the change.
  IF TG_OP = 'UPDATE' AND NEW.amount_cents = OLD.amount_cents THEN
    RETURN NULL;
  END IF;
  INSERT INTO account_monthly_balances (organization_id, account_id, month, amount_cents)
  VALUES (NEW.organization_id, NEW.account_id, date_trunc('month', NEW.day)::date,
          NEW.amount_cents - CASE WHEN TG_OP = 'UPDATE' THEN OLD.amount_cents ELSE 0 END)
  ON CONFLICT (organization_id, account_id, month)
  DO UPDATE SET amount_cents = account_monthly_balances.amount_cents + excluded.amount_cents;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER account_daily_balances_monthly
AFTER INSERT OR UPDATE OR DELETE ON account_daily_balances
FOR EACH ROW EXECUTE FUNCTION account_monthly_balances_follow();
--> statement-breakpoint

-- The months of the books written before this table existed.
INSERT INTO account_monthly_balances (organization_id, account_id, month, amount_cents)
SELECT organization_id, account_id, date_trunc('month', day)::date, sum(amount_cents)
FROM account_daily_balances
GROUP BY 1, 2, 3;
