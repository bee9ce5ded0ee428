-- Sales tax inside a bank amount: an account line classified with a tax rate posts its amount less the tax to its
-- account and the tax to the rate's liability account. The line keeps the gross amount (the lines still sum to the
-- bank amount) and says how much of it was tax.
ALTER TABLE "bank_transaction_lines" ADD COLUMN "tax_rate_id" uuid;--> statement-breakpoint
ALTER TABLE "bank_transaction_lines" ADD COLUMN "tax_cents" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "bank_transaction_lines" ADD CONSTRAINT "bank_transaction_lines_tax_rate_fk" FOREIGN KEY ("organization_id","tax_rate_id") REFERENCES "public"."tax_rates"("organization_id","id");--> statement-breakpoint
ALTER TABLE "bank_transaction_lines" ADD CONSTRAINT "bank_transaction_lines_tax" CHECK (("tax_rate_id" is not null or "tax_cents" = 0) and ("tax_rate_id" is null or "account_id" is not null));
