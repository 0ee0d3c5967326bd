/**
 * The Rein service tag, for the executor's modules: declared in the public `Services` module, so that the
 * types of layers and effects that need it can be named by users' declaration files.
 *
 * @internal
 */
export { Rein, type Services, type Services as Service, type Tokenizer } from "../Services.js"
