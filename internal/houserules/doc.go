// Package houserules holds no code, only a test that makes the rules of the
// layout executable (README.md, "Layout"):
//
//   - a role (every top-level directory that is not cmd, shared, internal,
//     deploy, docs or e2e: today consumer, uploader, committer and
//     supervisor) never imports another role or internal/;
//   - shared/ never imports a role or internal/;
//   - a non-test Go file stays under 700 lines, or says why next to its
//     package clause in a comment that starts with "// size:";
//   - README.md's Layout table has a row for every top-level directory
//     with Go code and every package of internal/ (readme_test.go).
//
// The test reads the source tree from the module root, so a new role
// directory is covered the day it is added.
package houserules
