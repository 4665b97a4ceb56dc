/// The nearest of `names` to `name` by edit distance (Levenshtein, case folded), when it is near enough to be a
/// slip of the keyboard: at most 2 edits, or a third of the name's length for longer names.
public enum NearestName {
    public static func nearest(_ name: String, in names: [String]) -> String? {
        let a = Array(name.lowercased().unicodeScalars)
        var best: (String, Int)?
        for candidate in names {
            let b = Array(candidate.lowercased().unicodeScalars)
            guard abs(a.count - b.count) <= 3 else { continue }
            var row = Array(0...b.count)
            for i in 1...max(1, a.count) where !a.isEmpty {
                var prev = row[0]
                row[0] = i
                for j in stride(from: 1, through: b.count, by: 1) {
                    let cur = row[j]
                    row[j] = min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1))
                    prev = cur
                }
            }
            let d = a.isEmpty ? b.count : row[b.count]
            if d <= max(2, a.count / 3), d < (best?.1 ?? .max) { best = (candidate, d) }
        }
        return best?.0
    }
}
