-- A company's opening balances come in as one journal entry of their own source, so that the ledger, its reports and
-- a second import can tell the opening entry from the entries that follow it.
ALTER TYPE "public"."entry_source" ADD VALUE IF NOT EXISTS 'opening_balance';
