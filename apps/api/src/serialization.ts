import SerializerSelector, { type Serializer, type SerializerFactory } from '@fastify/fast-json-stringify-compiler';

/**
 * Fastify's response serializers (fast-json-stringify), each built the first time its route answers with that status
 * instead of when the route is registered. Building all of them took most of a start (about 1.5 s of CPU for a few
 * hundred routes and their HEAD twins) and their memory stayed with the process whether or not the route was ever
 * called. `compileAll` builds the ones still waiting: a test calls it so that a schema fast-json-stringify cannot
 * compile still fails the suite, not a request.
 */
export function lazySerializers(): {
  buildSerializer: SerializerFactory;
  compileAll: () => number;
} {
  const waiting = new Set<() => unknown>();
  const factory = SerializerSelector();
  return {
    buildSerializer(externalSchemas, serializerOpts) {
      const compile = factory(externalSchemas, serializerOpts);
      return (route) => {
        let serialize: Serializer | undefined;
        const build = () => {
          waiting.delete(build);
          serialize ??= compile(route);
          return serialize;
        };
        waiting.add(build);
        return (data: unknown) => (serialize ?? build())(data);
      };
    },
    compileAll() {
      const builds = [...waiting];
      for (const build of builds) build();
      return builds.length;
    },
  };
}
