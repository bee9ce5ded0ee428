import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError } from '@firm/core';
import {
  type OpeningBalancesInput,
  parseOpeningBalancesCsv,
  postOpeningBalances,
  presentAccount,
  presentEntry,
} from '@firm/ledger';
import type { FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { errorResponses, sendError } from '../../errors/responses';
import { bearerChallenge } from '../../origin';
import { IdempotencyHeaders, runIdempotent } from '../../plugins/idempotency';
import { CompanyParams } from '../../schemas';
import { ledgerContext } from '../context';
import { OpeningBalancesBody, OpeningBalancesCsv, OpeningBalancesQuery, OpeningBalancesResult } from './schemas';

/** The scope closing the books needs, here as on PATCH /books. */
const BOOKS_CLOSE = 'books:close';

const description =
  'One balanced entry (source `opening_balance`) from lines of account (code or name) and debit or credit ' +
  '(decimal strings). JSON, or `text/csv` (columns code or name, debit, credit, type) with the options as query ' +
  'parameters. `createMissingAccounts` creates unknown accounts (type from the line or the code range). The ' +
  'difference goes to "Opening balance equity" (3050 or the next free 30xx). Bad lines: 422 ' +
  'OPENING_BALANCES_INVALID, all at once, nothing written. A second opening: 409 OPENING_BALANCES_EXIST unless ' +
  '`replace`. `closeBooksBefore` needs books:close. Requires Idempotency-Key.';

/** The request as the ledger takes it: the JSON body, or the CSV's rows and the query's options. */
function inputOf(request: FastifyRequest): OpeningBalancesInput {
  const query = request.query as Static<typeof OpeningBalancesQuery>;
  if (typeof request.body === 'string') {
    if (!query.date) {
      throw new DomainError('VALIDATION_ERROR', 'a CSV body needs the date as a query parameter', [
        { field: 'querystring.date', message: 'is required with a CSV body' },
      ]);
    }
    const { rows, rowNumbers, columns } = parseOpeningBalancesCsv(request.body);
    return {
      date: query.date,
      rows,
      rowNumbers,
      columns,
      createMissingAccounts: query.createMissingAccounts,
      replace: query.replace,
      closeBooksBefore: query.closeBooksBefore,
    };
  }
  const body = request.body as Static<typeof OpeningBalancesBody>;
  return {
    date: body.date,
    rows: body.lines,
    createMissingAccounts: body.createMissingAccounts,
    replace: body.replace,
    closeBooksBefore: body.closeBooksBefore,
  };
}

export const openingBalanceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // CSV bodies reach this route only, as text.
  app.addContentTypeParser('text/csv', { parseAs: 'string' }, (_request, body, done) => done(null, body));

  app.post(
    '/companies/:companyId/opening-balances',
    {
      config: { scope: 'entries:write', organization: 'path' },
      schema: {
        tags: ['posting'],
        summary: 'Post a company’s opening balances',
        description,
        params: CompanyParams,
        headers: IdempotencyHeaders,
        querystring: OpeningBalancesQuery,
        body: {
          content: {
            'application/json': { schema: OpeningBalancesBody },
            'text/csv': { schema: OpeningBalancesCsv },
          },
        },
        response: { 201: OpeningBalancesResult, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const input = inputOf(request);
      // Closing the books is refused as a route that needs books:close refuses it.
      if (input.closeBooksBefore && !request.credential.scopes.has(BOOKS_CLOSE)) {
        if (/^Bearer\s/i.test(request.headers.authorization ?? '')) {
          reply.header(
            'www-authenticate',
            bearerChallenge(request, { error: 'insufficient_scope', scope: BOOKS_CLOSE }),
          );
        }
        return sendError(reply, request, 'INSUFFICIENT_SCOPE', `this credential lacks the scope ${BOOKS_CLOSE}`, [
          { message: 'missing scope', scope: BOOKS_CLOSE },
        ]);
      }
      const outcome = await runIdempotent(request, reply, async (tx) => {
        const result = await postOpeningBalances(tx, ledgerContext(request), request.organization.id, input);
        return {
          status: 201,
          body: {
            data: {
              entry: presentEntry(result.entry),
              createdAccounts: result.createdAccounts.map(presentAccount),
              difference: result.difference,
              replacedEntryId: result.replacedEntryId,
              booksClosedThrough: result.booksClosedThrough,
            },
          },
        };
      });
      // Closing the books changed the organization's row: lookups that kept it start again.
      if (input.closeBooksBefore) app.apiKeyCache.clear();
      return outcome;
    },
  );
};
