/**
 * The `openai-compatible` entry of the provider registry (`providers.ts`): endpoints over HTTP, the base
 * URL from `--base-url` or `REIN_BASE_URL`, the key only from `REIN_API_KEY` (as `Redacted`).
 *
 * @internal
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type { Provider } from "@rein/core"
import * as OpenAiCompatible from "@rein/providers/OpenAiCompatible"
import * as Transport from "@rein/providers/Transport"
import type { Scope } from "effect"
import { Config, Effect, Either, Layer, Option } from "effect"
import { InputError } from "../InputError.js"
import * as Password from "./password.js"

// A valid URL that the adapter would refuse only because a key would go over plain http:// to another host.
const insecure = (url: string): boolean => {
  const check = (allowInsecureHttp: boolean) =>
    Either.isRight(Transport.checkBaseUrl(url, { field: "baseUrl", credentialed: true, allowInsecureHttp }))
  return check(true) && !check(false)
}

/** The HTTP client lives in the command's scope: it must outlive the provider's construction. @internal */
export const real = (
  name: string,
  flag: Option.Option<string>
): Effect.Effect<Provider.Provider, InputError, Scope.Scope> =>
  Effect.gen(function*() {
    const env = yield* Effect.orElseSucceed(Config.option(Config.string("REIN_BASE_URL")), () => Option.none())
    // An empty value (REIN_BASE_URL= in a shell) counts as unset.
    const baseUrl = Option.filter(Option.orElse(flag, () => env), (url) => url.trim() !== "")
    if (Option.isNone(baseUrl)) {
      return yield* new InputError({
        message: `the catalog names provider "${name}": give its base URL with --base-url or REIN_BASE_URL`
      })
    }
    const apiKey = yield* Effect.orElseSucceed(Config.option(Config.redacted("REIN_API_KEY")), () => Option.none())
    if (Option.isSome(apiKey) && insecure(baseUrl.value)) {
      return yield* new InputError({
        message:
          `${name}: --base-url ${
            Password.maskStore(baseUrl.value)
          }: rein sends REIN_API_KEY only over https:// (or plain ` +
          "http:// to a loopback host such as 127.0.0.1, e.g. through an SSH tunnel): give an https:// URL, or " +
          "unset REIN_API_KEY if the server needs no key"
      })
    }
    const http = yield* Layer.build(NodeHttpClient.layerUndici)
    return yield* OpenAiCompatible.make({
      baseUrl: baseUrl.value,
      ...(Option.isSome(apiKey) ? { apiKey: apiKey.value } : {})
    }).pipe(
      Effect.mapError((e) => new InputError({ message: `${name}: ${e.message}` })),
      Effect.provide(http)
    )
  })
