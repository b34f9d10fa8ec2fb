import Testing
@testable import TernTransport

/// libpsl's answers as the cookie jar gets them, and what the list does without them.
@Suite(.onTestThreads) struct PublicSuffixListTests {
    @Test(.enabled(if: PublicSuffixList.isAvailable, "the system has no libpsl"))
    func suffixesAreKnownAndRegistrableDomainsAreNot() {
        #expect(PublicSuffixList.isPublicSuffix("com"))
        #expect(PublicSuffixList.isPublicSuffix("co.uk"))
        #expect(PublicSuffixList.isPublicSuffix("co.uk."))
        #expect(!PublicSuffixList.isPublicSuffix("shop.co.uk"))
        #expect(!PublicSuffixList.isPublicSuffix("example.com"))
    }

    @Test(.enabled(if: PublicSuffixList.isAvailable, "the system has no libpsl"))
    func aHostMaySetCookiesForItselfAndItsRegistrableParentsOnly() {
        #expect(PublicSuffixList.acceptsCookie(from: "www.shop.co.uk", for: "shop.co.uk"))
        #expect(PublicSuffixList.acceptsCookie(from: "www.shop.co.uk.", for: "shop.co.uk."))
        #expect(PublicSuffixList.acceptsCookie(from: "www.shop.co.uk", for: "www.shop.co.uk"))
        #expect(!PublicSuffixList.acceptsCookie(from: "www.shop.co.uk", for: "co.uk"))
        #expect(!PublicSuffixList.acceptsCookie(from: "www.shop.co.uk", for: "co.uk."))
        #expect(!PublicSuffixList.acceptsCookie(from: "www.shop.co.uk", for: "bank.co.uk"))
    }

    /// A name the list cannot judge is never a registrable domain.
    @Test func namesTheListCannotJudgeAreRefused() {
        #expect(PublicSuffixList.listed("co.uk.") == "co.uk")
        #expect(PublicSuffixList.listed(".") == nil)
        #expect(PublicSuffixList.listed("") == nil)
        #expect(PublicSuffixList.listed("рф") == nil)
        #expect(PublicSuffixList.isPublicSuffix("рф"))
        #expect(!PublicSuffixList.acceptsCookie(from: "shop.рф", for: "shop.рф"))
    }
}
