//! The `mad` binary: see [`mad_tools::cli`].

fn main() {
    let mut argv = Vec::new();
    for a in std::env::args_os() {
        match a.into_string() {
            Ok(s) => argv.push(s),
            Err(bad) => {
                eprintln!("mad: argument {bad:?} is not valid UTF-8");
                std::process::exit(2);
            }
        }
    }
    // The process exits as soon as the command returns.
    mad_tools::session::exit_after_command();
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    // stderr is not held locked: the progress display's thread writes
    // there too (std's lock per write keeps lines whole).
    let mut stderr = std::io::stderr();
    let code = mad_tools::cli::run(
        &argv,
        &mut mad_tools::cli::Io {
            stdin: &mut stdin.lock(),
            stdout: &mut stdout.lock(),
            stderr: &mut stderr,
        },
    );
    std::process::exit(code);
}
