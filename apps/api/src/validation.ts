import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { Value } from 'typebox/value';

/**
 * The TypeBox validator compiler of @fastify/type-provider-typebox, checking first: headers, path parameters and
 * query strings are converted (`"5"` to 5, `"true"` to true) only when they do not already pass as given. Most
 * requests' do (headers are strings, and so are most parameters), and the conversion walks the whole value each
 * time; what a value that passes would be converted to, it already is. Bodies are never converted.
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  // Compiled on the route's first request, like its serializers (serialization.ts): most routes of a process never
  // see one.
  let compiled: ReturnType<typeof Compile> | undefined;
  return (value): { value: unknown } | { error: FastifySchemaValidationError[] } => {
    const check = (compiled ??= Compile(schema));
    if (check.Check(value)) return { value };
    if (httpPart !== 'body') {
      const converted = Value.Convert(schema, value);
      if (check.Check(converted)) return { value: converted };
      return { error: check.Errors(converted) as FastifySchemaValidationError[] };
    }
    return { error: check.Errors(value) as FastifySchemaValidationError[] };
  };
};
