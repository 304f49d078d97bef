// (Spectral loads one function a file) The contract model's rules, as the server applies them:
// generated/contract-rules.js is src/contract/ bundled by `npm run generate`.
export { contractProblems as default } from '../../generated/contract-rules.js'
