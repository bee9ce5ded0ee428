import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { PostingInput } from '@firm/ledger';
import type { Static, TSchema } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { IdempotencyHeaders, runIdempotentPosting } from '../../plugins/idempotency';
import {
  CompanyDepositBody,
  CompanyJournalEntryBody,
  CompanyParams,
  CompanyPurchaseBody,
  CompanyReceipt,
  CompanyTransferBody,
  HeaderDepositBody,
  HeaderJournalEntryBody,
  HeaderPurchaseBody,
  HeaderReceipt,
  HeaderTransferBody,
} from './schemas';
import * as requests from './requests';

/** A body schema and the function that makes its posting, checked against each other where they are paired. */
interface Form {
  body: TSchema;
  /** The validated body (as its schema states it) to the ledger's input. */
  toInput(body: unknown): PostingInput;
}

const form = <B extends TSchema>(body: B, toInput: (body: Static<B>) => PostingInput): Form => ({
  body,
  // The route validated the body against `body` before this runs.
  toInput: (value) => toInput(value as Static<B>),
});

interface PostingRoute {
  path: string;
  summary: string;
  description: string;
  company: Form;
  header: Form;
}

/**
 * The posting routes. Each exists in two forms (organization header and company path) that differ
 * only in body shape and receipt timestamp name; both go through one idempotent posting path.
 */
const ROUTES: PostingRoute[] = [
  {
    path: 'purchases',
    summary: 'Post a purchase',
    description: 'Money out of a bank or credit-card account into expense (or other) accounts.',
    company: form(CompanyPurchaseBody, requests.companyPurchase),
    header: form(HeaderPurchaseBody, requests.headerPurchase),
  },
  {
    path: 'deposits',
    summary: 'Post a deposit',
    description: 'Money into a bank account from income (or other) accounts; the mirror of a purchase.',
    company: form(CompanyDepositBody, requests.companyDeposit),
    header: form(HeaderDepositBody, requests.headerDeposit),
  },
  {
    path: 'transfers',
    summary: 'Post a transfer',
    description: 'An amount moved between two different balance-sheet accounts (asset, liability, equity).',
    company: form(CompanyTransferBody, requests.companyTransfer),
    header: form(HeaderTransferBody, requests.headerTransfer),
  },
  {
    path: 'journal-entries',
    summary: 'Post a balanced journal entry',
    description: 'Lines whose debits equal their credits, posted at once.',
    company: form(CompanyJournalEntryBody, requests.companyJournalEntry),
    header: form(HeaderJournalEntryBody, requests.headerJournalEntry),
  },
];

const POSTING_ERRORS = errorResponses(409, 415, 422);

export const postingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  for (const route of ROUTES) {
    app.post(
      `/${route.path}`,
      {
        config: { scope: 'entries:write', organization: 'header' },
        schema: {
          tags: ['posting'],
          summary: route.summary,
          description: `${route.description} Organization-header form (legacy). Requires Idempotency-Key.`,
          headers: IdempotencyHeaders,
          body: route.header.body,
          response: { 201: HeaderReceipt, ...POSTING_ERRORS },
        },
      },
      async (request, reply) =>
        runIdempotentPosting(request, reply, route.header.toInput(request.body), (r) => ({
          journalEntryId: r.journalEntryId,
          status: r.status,
          postedAt: r.postedAt.toISOString(),
        })),
    );

    app.post(
      `/companies/:companyId/${route.path}`,
      {
        config: { scope: 'entries:write', organization: 'path' },
        schema: {
          tags: ['posting'],
          summary: `${route.summary} (company path)`,
          description: `${route.description} Company-path form. Requires Idempotency-Key.`,
          params: CompanyParams,
          headers: IdempotencyHeaders,
          body: route.company.body,
          response: { 201: CompanyReceipt, ...POSTING_ERRORS },
        },
      },
      async (request, reply) =>
        runIdempotentPosting(request, reply, route.company.toInput(request.body), (r) => ({
          journalEntryId: r.journalEntryId,
          status: r.status,
          createdAt: r.postedAt.toISOString(),
        })),
    );
  }
};
