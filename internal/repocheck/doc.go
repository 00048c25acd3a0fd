// Package repocheck checks the repository as a whole; it holds tests only. They keep true
// what review found and no single package's tests can see:
//
//   - no build output is committed: a tracked file that is an executable (ELF, Mach-O or
//     PE, as `go build` writes them) fails `make test`, whatever its name;
//   - the layers hold: only the Lambdas of functions/ and the CLI of cmd/ import a driver
//     (internal/deployer, the drift function's driver), so every reader gets the run's data
//     from the data packages; and no product code imports the emulator (internal/awslocal
//     and below), which only tests, the CLI's local mode and localcairn may use; and a
//     leaf (internal/graph) imports the standard library only, so the run engine and the
//     emulator can share it without bringing anything else along;
//   - what the CLI prints to a terminal goes through internal/printer: cmd/cairn,
//     internal/follow and internal/diff print no value with fmt or io directly, so
//     nothing a template, config, CloudFormation or CDK says can forge a line or send an
//     escape sequence (TestTerminalPrintsGoThroughThePrinter);
//   - the emulator stays apart (TestEmulatorBoundary, TestFunctionsLinkNoEmulator): it
//     links only itself and the leaf packages of emulatorLeaves (clock, awsclient, sam,
//     spec, graph); local mode (localcairn, localdir) is imported only by the CLI's local
//     commands; the Lambda functions, built as make lambdas builds them, link neither;
//   - files and functions stay a size a reader holds in mind: 600 lines a non-test .go
//     file, 120 lines a function (TestSizeBudgets); what was longer when the budgets came is
//     listed with its size then (longFiles, longFuncs), may not grow, and leaves the list
//     once back within the budget.
package repocheck
