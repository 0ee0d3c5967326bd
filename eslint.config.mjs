// Lint and format in one pass: typescript-eslint for correctness, the Effect repo's dprint rule for layout
// (two spaces, no semicolons, double quotes, 120 columns), as in the Effect monorepo.
import effect from "@effect/eslint-plugin"
import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  {
    ignores: ["**/dist/**", "**/build/**", "**/node_modules/**", "**/*.d.ts", "**/.tmp/**", "**/.stryker-tmp*/**", "**/*.mjs", "**/*.cjs"]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...effect.configs.dprint,
  {
    languageOptions: { parserOptions: { ecmaVersion: 2022, sourceType: "module" } },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/ban-ts-comment": ["error", { "ts-ignore": true, "ts-expect-error": true }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/array-type": ["error", { default: "generic", readonly: "generic" }],
      "no-restricted-syntax": [
        "error",
        { selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']", message: "Use Clock, not Date.now()" }
      ],
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }]
    }
  },
  {
    files: ["packages/*/src/**/*.ts"],
    rules: {
      "no-restricted-globals": ["error", { name: "setTimeout", message: "Use Effect.sleep / Clock in library code" }]
    }
  }
)
