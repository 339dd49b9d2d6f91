import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

import org.antlr.runtime.CommonTokenStream;
import org.antlr.runtime.Token;
import org.apache.hadoop.hive.metastore.parser.ExpressionTree;
import org.apache.hadoop.hive.metastore.parser.FilterLexer;
import org.apache.hadoop.hive.metastore.parser.FilterParser;

/**
 * A test oracle: Hive's own metastore filter parser (from the hive-metastore jar on the class path) and
 * java.util.regex, answering one request per line on stdin. Text travels as comma-separated code points.
 *
 *   P <text>              parse a filter: "T <tree>" (prefix notation), "V <tree>" (parsed after recovering
 *                         from a syntax error), "R" (the rest of the input ignored), or "E <msg>"
 *   M <pattern> <value>   Pattern.matches: "1", "0", or "E <msg>"
 *   F <pattern> <value>   Pattern.compile(pattern).matcher(value).find(): "1", "0", or "E <msg>"
 */
public final class HiveFilterOracle {
    private static String decode(String field) {
        StringBuilder out = new StringBuilder();
        if (!field.equals("-")) {
            for (String part : field.split(",")) {
                out.appendCodePoint(Integer.parseInt(part));
            }
        }
        return out.toString();
    }

    private static String encode(String text) {
        if (text.isEmpty()) {
            return "-";
        }
        StringBuilder out = new StringBuilder();
        text.codePoints().forEach(cp -> {
            if (out.length() > 0) {
                out.append(',');
            }
            out.append(cp);
        });
        return out.toString();
    }

    private static void tree(ExpressionTree.TreeNode node, StringBuilder out) {
        if (node instanceof ExpressionTree.LeafNode) {
            ExpressionTree.LeafNode leaf = (ExpressionTree.LeafNode) node;
            Object value = leaf.value;
            String type = value instanceof String ? "S" : value instanceof Long ? "I" : "D";
            out.append("L ").append(encode(leaf.keyName)).append(' ').append(leaf.operator.name()).append(' ')
                .append(type).append(' ').append(encode(String.valueOf(value))).append(' ')
                .append(leaf.isReverseOrder ? '1' : '0');
            return;
        }
        out.append(node.getAndOr() == ExpressionTree.LogicalOperator.AND ? "A " : "O ");
        tree(node.getLhs(), out);
        out.append(' ');
        tree(node.getRhs(), out);
    }

    private static String parse(String filter) {
        try {
            FilterLexer lexer = new FilterLexer(new ExpressionTree.ANTLRNoCaseStringStream(filter));
            CommonTokenStream tokens = new CommonTokenStream(lexer);
            StringBuilder recovered = new StringBuilder();
            FilterParser parser = new FilterParser(tokens) {
                @Override
                public void emitErrorMessage(String message) {
                    recovered.append(message).append("; ");
                }
            };
            parser.filter();
            if (lexer.errorMsg != null) {
                return "E " + lexer.errorMsg;
            }
            if (tokens.LT(1).getType() != Token.EOF) {
                return "R";
            }
            StringBuilder out = new StringBuilder(recovered.length() > 0 ? "V " : "T ");
            tree(parser.tree.getRoot(), out);
            return out.toString();
        } catch (Exception e) {
            return "E " + e;
        }
    }

    private static String regex(String pattern, String value, boolean whole) {
        try {
            Pattern compiled = Pattern.compile(pattern);
            boolean hit = whole ? compiled.matcher(value).matches() : compiled.matcher(value).find();
            return hit ? "1" : "0";
        } catch (Exception e) {
            return "E " + e.getMessage();
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            String[] fields = line.split(" ");
            String answer;
            switch (fields[0]) {
                case "P":
                    answer = parse(decode(fields[1]));
                    break;
                case "M":
                    answer = regex(decode(fields[1]), decode(fields[2]), true);
                    break;
                case "F":
                    answer = regex(decode(fields[1]), decode(fields[2]), false);
                    break;
                default:
                    answer = "E unknown request";
            }
            out.println(answer.replaceAll("[\\n\\r\\u0085\\u2028\\u2029]", " "));
        }
    }
}
