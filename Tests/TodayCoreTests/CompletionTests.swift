import Foundation
import TestSupport
import Testing

/// todayctl's completions for bash, zsh and fish, made from the table of
/// commands `--help` prints: the three shells load them, they offer what
/// `--help` and the man page list, and they complete operands and option
/// values.
@Suite struct CompletionTests {
    /// The commands `todayctl --help` lists: the first word of each usage line.
    static func helpCommands() async throws -> [String] {
        let help = try await run([Paths.todayctl, "--help"])
        let block = help.output.components(separatedBy: "\n\n")[1]
        return block.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// The commands of the man page's COMMANDS section: the first word
    /// after each `.TP`.
    static func manCommands() throws -> [String] {
        let page = try String(contentsOf: Paths.root.appendingPathComponent("packaging/man/todayctl.1"), encoding: .utf8)
        let lines = page.components(separatedBy: ".SH COMMANDS\n")[1].components(separatedBy: "\n.SH ")[0].split(separator: "\n")
        var names: [String] = []
        for (index, line) in lines.enumerated() where line == ".TP" && index + 1 < lines.count {
            let words = lines[index + 1].replacingOccurrences(of: "\"", with: "").split(separator: " ").dropFirst()
            guard let name = words.first.map({ $0.replacingOccurrences(of: "\\-", with: "-") }), !names.contains(name) else { continue }
            names.append(name)
        }
        return names
    }

    func script(_ shell: String) async throws -> URL {
        let file = try temporaryDirectory("completion").appendingPathComponent("todayctl.\(shell)")
        let made = try await run([Paths.todayctl, "completions", shell])
        #expect(made.status == 0, "\(made.error)")
        try made.output.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// What bash-completion offers for `line` (the cursor at its end).
    func bash(_ file: URL, _ line: String) async throws -> [String] {
        var words = line.split(separator: " ", omittingEmptySubsequences: true).map { "'\($0)'" }
        if line.hasSuffix(" ") { words.append("''") }
        let program = """
            source /usr/share/bash-completion/bash_completion
            source \(file.path)
            COMP_WORDS=(\(words.joined(separator: " "))); COMP_CWORD=\(words.count - 1)
            COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}
            _todayctl todayctl
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let result = try await run(["bash", "-c", program])
        #expect(result.status == 0, "\(result.error)")
        return result.output.split(separator: "\n").map(String.init)
    }

    /// What fish offers for `line`: the first column of `complete -C`.
    func fish(_ file: URL, _ line: String) async throws -> [String] {
        let result = try await run(["fish", "--no-config", "-c", "source \(file.path); complete -C '\(line)'"])
        #expect(result.status == 0 && result.error.isEmpty, "\(result.error)")
        return result.output.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
    }

    @Test func helpManPageAndCompletionsListTheSameCommands() async throws {
        let help = try await Self.helpCommands()
        #expect(help.count >= 18 && help.contains("completions") && help.contains("bar"), "\(help)")
        let man = try Self.manCommands()
        #expect(Set(man) == Set(help), "man page: \(man)")
        let bashFile = try await script("bash")
        let fishFile = try await script("fish")
        #expect(Set(try await bash(bashFile, "todayctl ").filter { !$0.hasPrefix("-") }) == Set(help))
        #expect(Set(try await fish(fishFile, "todayctl ")) == Set(help))
        let zshFile = try await script("zsh")
        let described = try String(contentsOf: zshFile, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("            '") }.compactMap { $0.dropFirst(13).split(separator: ":").first.map(String.init) }
        #expect(Set(described) == Set(help))
    }

    @Test func operandsAndOptionValuesComplete() async throws {
        let bashFile = try await script("bash")
        let fishFile = try await script("fish")
        for (line, expected) in [
            ("todayctl plist some.plist --to ", ["xml", "binary", "json"]),
            ("todayctl --json has-content org.example.W ", ["true", "false"]),
            ("todayctl bar --format ", ["waybar", "i3bar", "polybar", "genmon"]),
            ("todayctl completions ", ["bash", "zsh", "fish"]),
            ("todayctl defaults group.org.example ", ["get", "set", "remove", "list"]),
        ] {
            #expect(try await bash(bashFile, line) == expected, "bash: \(line)")
            #expect(Set(try await fish(fishFile, line)) == Set(expected), "fish: \(line)")
        }
        #expect(try await bash(bashFile, "todayctl plist --").contains("--to"))
        #expect(try await fish(fishFile, "todayctl plist --").contains("--to"))
    }

    @Test func zshAndFishLoadThemWithoutError() async throws {
        let zshFile = try await script("zsh")
        // As an interactive zsh does: compinit, then the file (compdef).
        let zsh = try await run(["zsh", "-f", "-c", "autoload -U compinit && compinit -u -D && source \(zshFile.path) && print ${_comps[todayctl]}"])
        #expect(zsh.status == 0 && zsh.error.isEmpty && zsh.output == "_todayctl\n", "\(zsh.output) \(zsh.error)")
        let fishFile = try await script("fish")
        let fish = try await run(["fish", "--no-config", "-c", "source \(fishFile.path); and complete -c todayctl | count"])
        #expect(fish.status == 0 && fish.error.isEmpty && (Int(fish.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 30, "\(fish.output) \(fish.error)")
    }
}
