// aws-local-stepfunctions needs Promise.withResolvers (Node 22); local and test runs are on Node 20.
import "../../local/polyfills.js";
