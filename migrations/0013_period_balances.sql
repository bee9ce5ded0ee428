-- Coarser rollups of account_daily_balances: per account and calendar month, and per account and calendar year, so
-- that a report over any range reads whole years and months here and only the days of the partial months at its
-- edges from account_daily_balances: a few rows per account whatever the number of lines or days. `month` is the
-- first day of the month, `year` the first day of the year.
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
CREATE TABLE "account_yearly_balances" (
	"organization_id" uuid NOT NULL,
	"account_id" uuid NOT NULL,
	"year" date NOT NULL,
	"amount_cents" bigint NOT NULL,
	CONSTRAINT "account_yearly_balances_pkey" PRIMARY KEY("organization_id","account_id","year"),
	CONSTRAINT "account_yearly_balances_account_fk" FOREIGN KEY ("organization_id","account_id")
		REFERENCES "public"."accounts"("organization_id","id"),
	CONSTRAINT "account_yearly_balances_first_day" CHECK (extract(day from "year") = 1 and extract(month from "year") = 1)
);
--> statement-breakpoint
CREATE INDEX "account_yearly_balances_org_year_idx" ON "account_yearly_balances" USING btree ("organization_id","year");
--> statement-breakpoint

-- Why in the database: every path that writes the daily rollup (a posting, a void, a bulk load, an operator with
-- psql) keeps the coarser ones with it in the same transaction, so they can never disagree. Each trigger fires per
-- row in the order the writer upserts them (account, then day), so concurrent postings lock monthly and yearly rows
-- in account order as they do daily rows, and cannot deadlock on them. A row that moves (another account or period)
-- is taken out of its old period and added to its new one; an update within one period adds the change.
CREATE FUNCTION account_monthly_balances_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  moved boolean := TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (NEW.organization_id <> OLD.organization_id
    OR NEW.account_id <> OLD.account_id OR date_trunc('month', NEW.day) <> date_trunc('month', OLD.day)));
BEGIN
  IF moved THEN
    INSERT INTO account_monthly_balances (organization_id, account_id, month, amount_cents)
    VALUES (OLD.organization_id, OLD.account_id, date_trunc('month', OLD.day)::date, -OLD.amount_cents)
    ON CONFLICT (organization_id, account_id, month)
    DO UPDATE SET amount_cents = account_monthly_balances.amount_cents + excluded.amount_cents;
  END IF;
  IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND NOT moved AND NEW.amount_cents = OLD.amount_cents) THEN
    RETURN NULL;
  END IF;
  INSERT INTO account_monthly_balances (organization_id, account_id, month, amount_cents)
  VALUES (NEW.organization_id, NEW.account_id, date_trunc('month', NEW.day)::date,
          NEW.amount_cents - CASE WHEN TG_OP = 'UPDATE' AND NOT moved THEN OLD.amount_cents ELSE 0 END)
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
CREATE FUNCTION account_yearly_balances_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  moved boolean := TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (NEW.organization_id <> OLD.organization_id
    OR NEW.account_id <> OLD.account_id OR date_trunc('year', NEW.month) <> date_trunc('year', OLD.month)));
BEGIN
  IF moved THEN
    INSERT INTO account_yearly_balances (organization_id, account_id, year, amount_cents)
    VALUES (OLD.organization_id, OLD.account_id, date_trunc('year', OLD.month)::date, -OLD.amount_cents)
    ON CONFLICT (organization_id, account_id, year)
    DO UPDATE SET amount_cents = account_yearly_balances.amount_cents + excluded.amount_cents;
  END IF;
  IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND NOT moved AND NEW.amount_cents = OLD.amount_cents) THEN
    RETURN NULL;
  END IF;
  INSERT INTO account_yearly_balances (organization_id, account_id, year, amount_cents)
  VALUES (NEW.organization_id, NEW.account_id, date_trunc('year', NEW.month)::date,
          NEW.amount_cents - CASE WHEN TG_OP = 'UPDATE' AND NOT moved THEN OLD.amount_cents ELSE 0 END)
  ON CONFLICT (organization_id, account_id, year)
  DO UPDATE SET amount_cents = account_yearly_balances.amount_cents + excluded.amount_cents;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER account_monthly_balances_yearly
AFTER INSERT OR UPDATE OR DELETE ON account_monthly_balances
FOR EACH ROW EXECUTE FUNCTION account_yearly_balances_follow();
--> statement-breakpoint

-- The books written before these tables existed (the monthly insert fires the yearly trigger).
INSERT INTO account_monthly_balances (organization_id, account_id, month, amount_cents)
SELECT organization_id, account_id, date_trunc('month', day)::date, sum(amount_cents)
FROM account_daily_balances
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3;
